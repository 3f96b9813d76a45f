import { execFile } from 'node:child_process';
import { access, readFile, realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where a tree came from, when it came from git. */
export interface SourceProvenance {
  commit: string;
  author: string;
  email: string;
  authoredAt: string;
  subject: string;
}

/**
 * Reads commit metadata with NUL separators through execFile (no shell, no quoting problems with
 * commit subjects).
 */
export async function commitInfo(gitArgs: string[], rev = 'HEAD'): Promise<SourceProvenance | undefined> {
  try {
    const { stdout } = await run(
      'git',
      [...gitArgs, 'log', '-1', '-z', '--format=%H%x00%an%x00%ae%x00%aI%x00%s', rev],
      { timeout: 10_000 },
    );
    const [commit, author, email, authoredAt, subject] = stdout.split('\0');
    return commit
      ? { commit, author: author ?? '', email: email ?? '', authoredAt: authoredAt ?? '', subject: subject ?? '' }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The provenance of a config directory (which commit it is): the `.release.json` the post-receive
 * hook writes into each release, or, for a plain git work tree, its HEAD. Undefined when the tree
 * is not from git.
 */
export async function provenanceOf(dir: string): Promise<SourceProvenance | undefined> {
  let root: string;
  try {
    root = await realpath(dir);
  } catch {
    return undefined;
  }
  for (const candidate of [join(root, '.release.json'), join(root, '..', '.release.json')]) {
    try {
      const r = JSON.parse(await readFile(candidate, 'utf8')) as SourceProvenance;
      if (/^[0-9a-f]{40}$/.test(r.commit)) return r;
    } catch {
      /* not a release */
    }
  }
  // No git process for a directory outside any work tree (it costs the event loop a fork per apply).
  if (!(await insideWorkTree(root))) return undefined;
  // A work tree with uncommitted edits is not that commit: record it as a plain directory.
  try {
    const { stdout } = await run('git', ['-C', root, 'status', '--porcelain', '--', '.'], { timeout: 10_000 });
    if (stdout.trim() !== '') return undefined;
  } catch {
    return undefined;
  }
  return commitInfo(['-C', root]);
}

/** Whether `dir` or a folder above it has a `.git` (a folder, or a file for worktrees and submodules). */
async function insideWorkTree(dir: string): Promise<boolean> {
  for (let d = dir; ; d = dirname(d)) {
    if (
      await access(join(d, '.git')).then(
        () => true,
        () => false,
      )
    )
      return true;
    if (dirname(d) === d) return process.env.GIT_DIR !== undefined;
  }
}
