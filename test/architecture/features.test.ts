/**
 * The feature folders (src/features/<name>/) keep their promise: each is in the registry, brings
 * golden cases for what it produces and rejected cases for what it refuses, pins every field it adds
 * in its own cases, names a docs page that exists and its gRPC client support, and imports nothing
 * but its own files, the kit and shared helpers (a feature sees only its own fields).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Feature } from '../../src/features/kit/feature.ts';
import { FEATURES } from '../../src/features/registry.ts';
import { GRPC_FEATURES } from '../../src/model/grpc-compat.ts';
import { modelFieldPaths } from '../../src/packaging/reference-docs.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { acceptedCases, featureFolders, fieldsUsed, isCovered, refusedCases } from '../helpers/golden-cases.ts';

const features = FEATURES as readonly Feature<unknown, unknown, unknown>[];
const accepted = acceptedCases();
const refused = refusedCases();
const casesOf = (all: typeof accepted, f: string) => all.filter((c) => c.name.startsWith(`${f}/`));

test('every feature folder is in the registry, and every registered feature has its folder', () => {
  assert.equal(featureFolders(), features.map((f) => f.name).sort());
});

for (const f of features) {
  test(`${f.name}: golden cases for what it produces, rejected cases for what it refuses`, () => {
    assert.ok(casesOf(accepted, f.name).length > 0, `src/features/${f.name}/golden/ has no case`);
    if (f.checks) assert.ok(casesOf(refused, f.name).length > 0, `src/features/${f.name}/rejected/ has no case`);
  });

  test(`${f.name}: every field it adds is used by its own cases`, () => {
    const roots = [
      ...Object.keys(f.fields.listener ?? {}).map((k) => `Listener.${k}`),
      ...Object.keys(f.fields.virtualHost ?? {}).map((k) => `VirtualHost.${k}`),
      ...Object.keys(f.fields.route ?? {}).map((k) => `VirtualHost.routes[].${k}`),
      ...Object.keys(f.fields.service ?? {}).map((k) => `Service.${k}`),
    ];
    assert.ok(roots.length > 0, 'a feature adds fields');
    const paths = modelFieldPaths().filter((p) => roots.some((r) => p === r || p.startsWith(`${r}.`)));
    for (const r of roots) assert.ok(paths.includes(r), `${r} is in the model's schema`);
    const used = fieldsUsed([...casesOf(accepted, f.name), ...casesOf(refused, f.name)].map((c) => c.input));
    const missing = paths.filter((p) => !isCovered(p, used));
    assert.equal(missing, [], `fields of ${f.name} its cases do not use:\n  ${missing.join('\n  ')}`);
  });

  test(`${f.name}: its docs page and heading exist, and it says which gRPC clients honour it`, () => {
    const [page, anchor] = f.docs.split('#');
    const file = projectPath('docs', page!);
    assert.ok(existsSync(file), `docs/${page} exists`);
    const slugs = [...readFileSync(file, 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) =>
      m[1]!
        .toLowerCase()
        .replace(/[^a-z0-9 -]/g, '')
        .replace(/ /g, '-'),
    );
    assert.ok(anchor && slugs.includes(anchor), `docs/${page} has a heading #${anchor}`);
    if (f.grpc.kind === 'grpc')
      for (const { row } of f.grpc.rows) assert.ok(row in GRPC_FEATURES, `gRPC feature table row ${row}`);
    else assert.ok(f.grpc.why.length > 0);
  });
}

test('a feature imports only its own files, the kit and shared helpers', () => {
  const root = projectPath('src', 'features');
  const allowed = (from: string, to: string) => {
    const rel = relative(root, to);
    return (
      rel.startsWith('kit/') || relative(projectPath('src'), to).startsWith('shared/') || dirname(to) === dirname(from)
    );
  };
  const bad: string[] = [];
  for (const f of featureFolders())
    for (const file of readdirSync(join(root, f)).filter((n) => n.endsWith('.ts'))) {
      const at = join(root, f, file);
      for (const m of readFileSync(at, 'utf8').matchAll(/^(?:import|export)[^;]*?from '(\.[^']+)'/gm)) {
        const to = resolve(dirname(at), m[1]!);
        if (!allowed(at, to)) bad.push(`${relative(root, at)} -> ${relative(root, to)}`);
      }
    }
  assert.equal(bad, []);
});

test.run();
