/**
 * Every field of every kind of the YAML model appears in at least one golden case (or the bundled
 * example), so every option's translation is pinned by a golden file; a field valid only in some
 * places may be covered where it is refused (a rejected-tree golden pins that diagnostic). A field
 * added to the schema without a case fails here, by name.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { modelFieldPaths } from '../../src/packaging/reference-docs.ts';
import { projectPath } from '../../src/shared/paths.ts';

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : /\.ya?ml$/.test(f) ? [p] : [];
  });

/** The field paths a document uses, in the schema's spelling (lists of lists are one `[]`). */
function usedPaths(kind: string, doc: unknown, out: Set<string>): void {
  const walk = (prefix: string, v: unknown): void => {
    if (Array.isArray(v)) {
      for (const x of v) walk(prefix.endsWith('[]') ? prefix : `${prefix}[]`, x);
      return;
    }
    if (v === null || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      const p = `${prefix}.${k}`;
      out.add(p);
      walk(p, x);
    }
  };
  walk(kind, doc);
}

test('every field of the model is used by a golden case', () => {
  const inputs = [
    ...readdirSync(projectPath('test', 'golden', 'cases')).flatMap((c) =>
      files(projectPath('test', 'golden', 'cases', c, 'input')),
    ),
    ...files(projectPath('config', 'services')),
    ...readdirSync(projectPath('test', 'golden', 'rejected')).flatMap((c) =>
      files(projectPath('test', 'golden', 'rejected', c, 'input')),
    ),
  ];
  const used = new Set<string>();
  for (const f of inputs)
    for (const d of parseAllDocuments(readFileSync(f, 'utf8'))) {
      const doc = d.toJS() as { kind?: unknown } | null;
      if (doc && typeof doc.kind === 'string') usedPaths(doc.kind, doc, used);
    }
  const covered = (path: string): boolean => {
    if (!path.includes('.*')) return used.has(path);
    // A map's values: any key stands for `*`.
    const re = new RegExp(`^${path.replace(/[.[\]]/g, (c) => `\\${c}`).replace(/\\\.\*/g, '\\.[^.]+')}$`);
    return [...used].some((u) => re.test(u));
  };
  const missing = [...new Set(modelFieldPaths())].filter((p) => !covered(p));
  assert.equal(missing, [], `fields no golden case uses:\n  ${missing.join('\n  ')}`);
});

test.run();
