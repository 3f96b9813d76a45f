/**
 * The folders of `src/` form layers: an import between two folders goes one way only. A cycle
 * (source -> model -> source) means neither can be understood, tested or changed alone; the same
 * holds for files.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectPath } from '../../src/shared/paths.ts';

const SRC = projectPath('src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The top folder under src/ of a file (`transports/grpc/server.ts` -> `transports`). */
function folderOf(file: string): string {
  return relative(SRC, file).split('/')[0] ?? '';
}

/** node -> nodes it imports from (a node is a folder or a file), with one example import each. */
export function importGraph(nodeOf: (file: string) => string): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of sourceFiles(SRC)) {
    const from = nodeOf(file);
    const edges = graph.get(from) ?? new Map<string, string>();
    graph.set(from, edges);
    for (const m of readFileSync(file, 'utf8').matchAll(/^(?:import|export)[^;]*?from '(\.[^']+)'/gm)) {
      const target = resolve(dirname(file), m[1]!);
      const to = nodeOf(target);
      if (to !== from && !edges.has(to)) edges.set(to, `${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }
  return graph;
}

/** Every cycle between folders, as the list of its edges' example imports. */
export function folderCycles(graph: Map<string, Map<string, string>>): string[][] {
  const cycles: string[][] = [];
  const seen = new Set<string>();
  const visit = (node: string, path: string[]) => {
    for (const next of graph.get(node)?.keys() ?? []) {
      const at = path.indexOf(next);
      if (at >= 0) {
        const ring = [...path.slice(at), next];
        const key = [...ring.slice(0, -1)].sort().join(',');
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push(ring.slice(0, -1).map((f, i) => graph.get(f)!.get(ring[i + 1]!)!));
        }
        continue;
      }
      if (path.length < 12) visit(next, [...path, next]);
    }
  };
  for (const start of graph.keys()) visit(start, [start]);
  return cycles;
}

test('no import cycles between the folders of src/', () => {
  const cycles = folderCycles(importGraph(folderOf));
  assert.equal(cycles, [], `cycles:\n${cycles.map((c) => `  ${c.join('\n    then ')}`).join('\n')}`);
});

test('no import cycles between the files of src/ either', () => {
  const cycles = folderCycles(importGraph((f) => relative(SRC, f)));
  assert.equal(cycles, [], `cycles:\n${cycles.map((c) => `  ${c.join('\n    then ')}`).join('\n')}`);
});

test('the write path imports nothing of the admin API: it serves, the API reads', () => {
  const graph = importGraph(folderOf);
  for (const folder of ['served', 'snapshot', 'compile', 'transports'])
    assert.is(graph.get(folder)?.get('admin'), undefined, `${folder}/ imports admin/`);
});

test('the cycle finder reports a cycle (self-check on a made-up graph)', () => {
  const g = new Map([
    ['a', new Map([['b', 'a/x.ts -> b/y.ts']])],
    ['b', new Map([['c', 'b/y.ts -> c/z.ts']])],
    ['c', new Map([['a', 'c/z.ts -> a/x.ts']])],
    ['d', new Map([['a', 'd/w.ts -> a/x.ts']])],
  ]);
  assert.equal(folderCycles(g), [['a/x.ts -> b/y.ts', 'b/y.ts -> c/z.ts', 'c/z.ts -> a/x.ts']]);
});

test.run();
