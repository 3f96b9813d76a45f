/**
 * The command blocks of README.md and docs/*.md, and how each is run. Every fenced block names its
 * language; a block of commands (sh, bash, console) says on the line before its fence which test
 * runs it, or why none can:
 *
 *   <!-- run: checkout -->                        test/docs/checkout-commands.test.ts, from a checkout
 *   <!-- run: checkout, beside npm start -->      the same, with the example served as `npm start` serves it
 *   <!-- run: package -->                         test/release/install.test.ts, in a machine the package is installed on
 *   <!-- run: archive -->                         the same test, in another machine, from the release archive alone
 *   <!-- not run: REASON -->                      an example that cannot run; the reason is shown to no one but says why
 *
 * A runner takes every block of its kind, page by page in the order written, so a block added to
 * the docs is run without anyone listing it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../../src/shared/paths.ts';
import { shellQuote } from '../../src/shared/shell-quote.ts';

export const COMMAND_LANGS = ['sh', 'bash', 'console'];

export type BlockMarker =
  { run: 'checkout'; besideNpmStart: boolean } | { run: 'package' | 'archive' } | { notRun: string } | undefined;

export interface DocBlock {
  /** Relative to the project: README.md, docs/operating.md. */
  page: string;
  /** Line of the opening fence. */
  line: number;
  lang: string;
  marker: BlockMarker;
  text: string;
}

/** The pages an operator reads: the README and docs/, not the generated reference. */
export function docPages(): string[] {
  return [
    'README.md',
    ...readdirSync(projectPath('docs'))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => join('docs', f)),
  ];
}

function marker(line: string | undefined): BlockMarker {
  const m = /^<!-- (run: (checkout|package|archive)(, beside npm start)?|not run: (.+)) -->$/.exec(line?.trim() ?? '');
  if (!m) return undefined;
  if (m[4]) return { notRun: m[4] };
  if (m[2] === 'checkout') return { run: 'checkout', besideNpmStart: Boolean(m[3]) };
  return { run: m[2] as 'package' | 'archive' };
}

export function docBlocks(pages = docPages()): DocBlock[] {
  const out: DocBlock[] = [];
  for (const page of pages) {
    const lines = readFileSync(projectPath(page), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const open = /^```(\S*)\s*$/.exec(lines[i]!);
      if (!open) continue;
      const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
      if (end < 0) throw new Error(`${page}:${i + 1}: a fenced block is not closed`);
      out.push({
        page,
        line: i + 1,
        lang: open[1]!,
        marker: marker(lines[i - 1]),
        text: lines.slice(i + 1, end).join('\n'),
      });
      i = end;
    }
  }
  return out;
}

export function commandBlocks(): DocBlock[] {
  return docBlocks().filter((b) => COMMAND_LANGS.includes(b.lang));
}

/** A command the runner starts in the background: the docs say it keeps running. */
const KEEPS_RUNNING = /#\s*keeps running\b.*$/;
/** A command whose effect takes a moment (a push reaching Envoy): retried until it succeeds. */
const GIVE_IT_A_MOMENT = /#.*\(give it a moment\)\s*$/;

const q = shellQuote;

/**
 * Blocks of one page as one bash session, as a person pastes them into one terminal (the directory
 * and what runs in the background carry from one block to the next): it stops at the first failing
 * command and names its page and line; a command marked `# keeps running` (a server, Envoy) is
 * started in the background and the command after it is retried until it succeeds (up to 60 s, as
 * a person would wait and look), as is one marked `(give it a moment)`; what was started in the
 * background is stopped when the session ends.
 */
export function sessionScript(blocks: readonly Pick<DocBlock, 'page' | 'line' | 'text'>[]): string {
  const out = [
    'set -eo pipefail',
    // `curl ... | head -c 600` ends curl early, as in the operator's terminal: curl then exits 23
    // (it could not write the rest), which pipefail would count as the command failing.
    'curl() { local s=0; command curl "$@" || s=$?; [ $s -eq 23 ] && return 0; return $s; }',
    '__bg=()',
    '__at=',
    '__stop() { __s=$?; for p in "${__bg[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done',
    '  for p in "${__bg[@]}"; do for i in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; done',
    '  if [ $__s -ne 0 ]; then echo "failed at $__at" >&2; for f in "${TMPDIR:-/tmp}"/doc-bg-$$-*.log; do',
    '    [ -f "$f" ] && { echo "--- $f" >&2; tail -n 40 "$f" >&2; }; done; fi; }',
    'trap __stop EXIT',
    // The last try runs as written, so that its failure stops the session with its own words.
    '__retry() { for __i in $(seq 1 300); do if __out=$(eval "$1" 2>&1); then printf "%s\\n" "$__out"; return 0; fi',
    '  sleep 0.2; done; (eval "$1"); }',
  ];
  let n = 0;
  for (const block of blocks) {
    let retryNext = false;
    let line = block.line;
    for (const raw of block.text.split('\n')) {
      line++;
      // A line continued with a backslash is one command with the next.
      if (out.length && out[out.length - 1]!.endsWith('\\')) {
        out[out.length - 1] = `${out[out.length - 1]!.slice(0, -1).trimEnd()} ${raw.trim()}`;
        continue;
      }
      if (!raw.trim() || raw.trim().startsWith('#')) continue;
      out.push(`__at=${q(`${block.page}:${line}`)}`);
      if (KEEPS_RUNNING.test(raw)) {
        const cmd = raw.replace(KEEPS_RUNNING, '').trim();
        out.push(`setsid bash -c ${q(cmd)} > "\${TMPDIR:-/tmp}/doc-bg-$$-${n++}.log" 2>&1 & __bg+=($!)`);
        retryNext = true;
        continue;
      }
      out.push(retryNext || GIVE_IT_A_MOMENT.test(raw) ? `__retry ${q(raw.trim())}` : raw);
      retryNext = false;
    }
  }
  return out.join('\n');
}

/** The blocks a runner runs, grouped by page in page order. */
export function sessionsOf(run: (b: DocBlock) => boolean): { page: string; blocks: DocBlock[] }[] {
  const pages = new Map<string, DocBlock[]>();
  for (const b of commandBlocks()) if (run(b)) pages.set(b.page, [...(pages.get(b.page) ?? []), b]);
  return [...pages].map(([page, blocks]) => ({ page, blocks }));
}
