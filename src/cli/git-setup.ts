/**
 * `fleetxds git-setup --base DIR`: a bare repository for `git push` deployment.
 *   DIR/config.git       bare repo; pre-receive validates the pushed tree with this very fleetxds
 *                        and rejects the push with the validator's errors; post-receive extracts
 *                        the commit into DIR/releases/<sha> and swaps DIR/current atomically
 *   DIR/current          -> releases/<sha>: point the server's configDir at DIR/current[/SUBDIR]
 * Only the configured branch may be pushed; deletes, non-fast-forwards, symlinks and submodules
 * are refused.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { shellQuote } from '../shared/shell-quote.ts';
import { commitInfo } from '../source/git-info.ts';

/**
 * How hooks call this same fleetxds (same Node, same loader flags, same entry file). Hooks run
 * inside the bare repository, so bare module specifiers of loader flags (`--import tsx`) are
 * resolved to absolute URLs here.
 */
function selfCommand(): string {
  const args = [...process.execArgv];
  for (let i = 0; i < args.length - 1; i++) {
    const flag = args[i] ?? '';
    const value = args[i + 1] ?? '';
    if (['--import', '--require', '-r', '--loader'].includes(flag) && !/^(\.|\/|file:)/.test(value)) {
      try {
        args[i + 1] = import.meta.resolve(value);
      } catch {
        /* leave as is */
      }
    }
  }
  return [process.execPath, ...args, resolve(process.argv[1] ?? '')].map(shellQuote).join(' ');
}

export function gitSetupCommand(opts: {
  base?: string;
  branch?: string;
  subdir?: string;
  keep?: string;
  envoy?: string[];
}): number {
  if (!opts.base) {
    process.stderr.write(
      'usage: fleetxds git-setup --base DIR [--branch main] [--subdir PATH] [--keep 20] [--envoy BINARY ...]\n',
    );
    return 2;
  }
  const base = resolve(opts.base);
  const branch = opts.branch ?? 'main';
  const subdir = (opts.subdir ?? '.').replace(/^\/+|\/+$/g, '') || '.';
  const keep = Number(opts.keep ?? 20);
  if (!/^[A-Za-z0-9._/-]+$/.test(branch) || subdir.split('/').includes('..') || !Number.isInteger(keep) || keep < 2) {
    process.stderr.write('invalid --branch, --subdir or --keep\n');
    return 2;
  }
  const repo = join(base, 'config.git');
  mkdirSync(join(base, 'releases'), { recursive: true });
  if (!existsSync(repo)) execFileSync('git', ['init', '--quiet', '--bare', `--initial-branch=${branch}`, repo]);
  for (const [k, v] of <[string, string][]>[
    ['receive.denyDeletes', 'true'],
    ['receive.denyNonFastForwards', 'true'],
    ['receive.fsckObjects', 'true'],
  ]) {
    execFileSync('git', ['--git-dir', repo, 'config', k, v]);
  }
  const self = selfCommand();
  // With --envoy, pushes are also judged by those Envoy binaries (the releases the fleet runs).
  const envoyArgs = (opts.envoy ?? []).map((b) => ` --envoy ${shellQuote(resolve(b))}`).join('');
  const pre = `#!/usr/bin/env bash
# fleetxds pre-receive: validate the whole pushed tree; a non-zero exit rejects the push.
set -uo pipefail
zero=0000000000000000000000000000000000000000
status=0
while read -r old new ref; do
  if [ "$ref" != "refs/heads/${branch}" ]; then
    echo "fleetxds: only ${branch} may be pushed (not $ref)"; status=1; continue
  fi
  if [ "$new" = "$zero" ]; then echo "fleetxds: deleting ${branch} is not allowed"; status=1; continue; fi
  bad=$(git ls-tree -r "$new" | awk '$1=="120000" || $1=="160000" {print $4}')
  if [ -n "$bad" ]; then echo "fleetxds: symlinks and submodules are refused: $bad"; status=1; continue; fi
  tmp=$(mktemp -d)
  git archive "$new" | tar -x -C "$tmp"
  # The tree this push replaces: a change removing most of a node group is refused unless a Guard allows it.
  prev=""
  old_tree=$(mktemp -d)
  if [ "$old" != "$zero" ]; then
    git archive "$old" | tar -x -C "$old_tree"
    [ -d "$old_tree/${subdir}" ] && prev="--previous $old_tree/${subdir}"
  fi
  # No folder (every file deleted: git keeps no empty folders) is an empty tree, judged as such.
  mkdir -p "$tmp/${subdir}"
  if ! ${self} validate "$tmp/${subdir}"${envoyArgs} $prev; then
    echo "fleetxds: push rejected: the config at \${new:0:12} is invalid (nothing was deployed)"; status=1
  fi
  rm -rf "$tmp" "$old_tree"
done
exit $status
`;
  const post = `#!/usr/bin/env bash
# fleetxds post-receive: extract the commit into releases/<sha>, then swap "current" with one rename.
set -euo pipefail
base=${shellQuote(base)}
exec 9>"$base/.deploy.lock"; flock 9
while read -r old new ref; do
  [ "$ref" = "refs/heads/${branch}" ] || continue
  rel="$base/releases/$new"
  if [ ! -d "$rel" ]; then
    rm -rf "$rel.partial"; mkdir -p "$rel.partial"
    git archive "$new" | tar -x -C "$rel.partial"
    ${self} release-meta --git-dir "$PWD" "$new" > "$rel.partial/.release.json"
    sync -f "$rel.partial" 2>/dev/null || true
    mv -T "$rel.partial" "$rel"
  fi
  ln -sfn "releases/$new" "$base/current.tmp"
  mv -T "$base/current.tmp" "$base/current"
  echo "fleetxds: \${new:0:12} is live"
  ls -1dt "$base"/releases/*/ 2>/dev/null | tail -n +$((${keep} + 1)) | xargs -r rm -rf
done
`;
  writeFileSync(join(repo, 'hooks', 'pre-receive'), pre);
  writeFileSync(join(repo, 'hooks', 'post-receive'), post);
  chmodSync(join(repo, 'hooks', 'pre-receive'), 0o755);
  chmodSync(join(repo, 'hooks', 'post-receive'), 0o755);
  process.stdout.write(
    `bare repository: ${repo}\nserve from:      ${join(base, 'current', subdir === '.' ? '' : subdir)}\npush ` +
      `with:       git remote add fleet ssh://<vm>${repo} && git push fleet ${branch}\n`,
  );
  return 0;
}

/** `fleetxds release-meta --git-dir D SHA`: the release's commit metadata as JSON (used by post-receive). */
export async function releaseMetaCommand(gitDir: string | undefined, sha: string | undefined): Promise<number> {
  if (!gitDir || !sha) return 2;
  const info = await commitInfo(['--git-dir', gitDir], sha);
  if (!info) return 1;
  process.stdout.write(`${JSON.stringify(info)}\n`);
  return 0;
}
