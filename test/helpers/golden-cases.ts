/**
 * Where golden cases live: a feature's beside it (src/features/<name>/golden/<variant>/ and
 * rejected/<variant>/), the others in test/golden/cases/ and test/golden/rejected/. A feature's
 * case is named `<feature>/<variant>`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { projectPath } from '../../src/shared/paths.ts';

export interface GoldenCase {
  readonly name: string;
  /** The tree to check. */
  readonly input: string;
  /** Accepted cases: the folder of expected files; refused ones: the expected.txt file. */
  readonly expected: string;
}

const FEATURES_DIR = projectPath('src', 'features');

const dirs = (at: string): string[] =>
  existsSync(at)
    ? readdirSync(at, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
        .sort()
    : [];

/** The folders under src/features/ that are features (the kit is what they are written with). */
export function featureFolders(): string[] {
  return dirs(FEATURES_DIR).filter((d) => d !== 'kit');
}

function cases(kind: 'golden' | 'rejected', sharedDir: string, expected: (dir: string) => string): GoldenCase[] {
  const out: GoldenCase[] = [];
  for (const feature of featureFolders()) {
    const at = join(FEATURES_DIR, feature, kind);
    for (const v of dirs(at))
      out.push({ name: `${feature}/${v}`, input: join(at, v, 'input'), expected: expected(join(at, v)) });
  }
  for (const c of dirs(sharedDir))
    out.push({ name: c, input: join(sharedDir, c, 'input'), expected: expected(join(sharedDir, c)) });
  return out;
}

/** Trees that are served: Envoy JSON out, one file per group and type in `expected`. */
export function acceptedCases(): GoldenCase[] {
  return cases('golden', projectPath('test', 'golden', 'cases'), (d) => join(d, 'expected'));
}

/** Trees that are refused, with the diagnostics an operator reads in `expected` (expected.txt). */
export function refusedCases(): GoldenCase[] {
  return cases('rejected', projectPath('test', 'golden', 'rejected'), (d) => join(d, 'expected.txt'));
}

const yamlFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? yamlFiles(join(dir, e.name)) : /\.ya?ml$/.test(e.name) ? [join(dir, e.name)] : [],
  );

/**
 * The field paths the documents under these folders use, in the schema's spelling
 * (`Listener.tracing.zipkin.service`; a list is `[]`, lists of lists one `[]`).
 */
export function fieldsUsed(dirs: readonly string[]): Set<string> {
  const used = new Set<string>();
  const walk = (prefix: string, v: unknown): void => {
    if (Array.isArray(v)) {
      for (const x of v) walk(prefix.endsWith('[]') ? prefix : `${prefix}[]`, x);
      return;
    }
    if (v === null || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      const p = `${prefix}.${k}`;
      used.add(p);
      walk(p, x);
    }
  };
  for (const f of dirs.flatMap(yamlFiles))
    for (const d of parseAllDocuments(readFileSync(f, 'utf8'))) {
      const doc = d.toJS() as { kind?: unknown } | null;
      if (doc && typeof doc.kind === 'string') walk(doc.kind, doc);
    }
  return used;
}

/** Whether `path` of the schema (`.*` for any key of a map) is among the used ones. */
export function isCovered(path: string, used: ReadonlySet<string>): boolean {
  if (!path.includes('.*')) return used.has(path);
  const re = new RegExp(`^${path.replace(/[.[\]]/g, (c) => `\\${c}`).replace(/\\\.\*/g, '\\.[^.]+')}$`);
  return [...used].some((u) => re.test(u));
}
