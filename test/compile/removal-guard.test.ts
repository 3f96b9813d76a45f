/**
 * No input may empty the fleet by accident: an empty tree, or a change removing most of a node
 * group's listeners and clusters, is refused by validate, the apply pipeline (watcher) and the git
 * hook alike, unless a Guard document in the tree says so.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';
import { runCli } from '../helpers/process.ts';

const GUARD = (fields: string) => `kind: Guard\nname: this-change\n${fields}\n`;
const TWO_LISTENERS = {
  ...BASE,
  'more.yaml': `kind: Listener
name: admin
port: 9090
virtualHosts: [ops]
---
kind: VirtualHost
name: ops
domains: [ops.example.com]
routes:
  - to: web
`,
};
const EXTRA = `---
kind: Listener
name: extra
port: 9191
virtualHosts: [ops]
`;

const validate = (...args: string[]) => runCli(['validate', ...args]);

test('a tree that serves nothing is refused (no YAML at all, or only secrets and services)', async () => {
  const trees: Record<string, string>[] = [
    { 'README.md': '# nothing here\n' },
    { 'services.yaml': BASE['services.yaml']! },
  ];
  for (const files of trees) {
    const r = await checkTree(writeTree(files));
    assert.is(r.config, undefined);
    assert.match(
      r.diagnostics.map(formatDiagnostic).join('\n'),
      /error FXDS_EMPTY_TREE: the tree defines nothing to serve .*allowEmpty: true/,
    );
  }
  const allowed = await checkTree(writeTree({ 'guard.yaml': GUARD('allowEmpty: true') }));
  assert.ok(allowed.config, 'a Guard with allowEmpty lets it through');
});

test('validate --previous refuses a change that removes most of a group; a Guard allows it', async () => {
  const before = writeTree({ ...TWO_LISTENERS, 'more.yaml': TWO_LISTENERS['more.yaml'] + EXTRA });
  const after = writeTree({ 'services.yaml': BASE['services.yaml']!, 'more.yaml': TWO_LISTENERS['more.yaml'] });
  assert.is(validate(after).status, 0, 'on its own the tree is fine');
  const r = validate(after, '--previous', before);
  assert.is(r.status, 1);
  assert.match(
    r.stderr,
    /error FXDS_MASS_REMOVAL: node group "default" would lose 3 of its 5 listeners and clusters at once \(60%, over the 50% one change may remove\): listener edge, listener extra, cluster api/,
  );
  // The two ways out: the Guard for this change, or a database of its own for another tree.
  assert.match(r.stderr, /add a document `kind: Guard` to the tree for this change with `maxRemovalPercent: 60`/);
  assert.match(r.stderr, /give it a database of its own \(`database` in the settings, or FLEETXDS_DATABASE\)/);
  writeTree({ 'guard.yaml': GUARD('maxRemovalPercent: 60') }, after);
  assert.is(validate(after, '--previous', before).status, 0);
});

test('the apply pipeline keeps serving when every file is deleted or a group is gutted, and applies it with a Guard', async () => {
  const dir = writeTree({ ...TWO_LISTENERS, 'more.yaml': TWO_LISTENERS['more.yaml'] + EXTRA });
  const app = await startServer(dir);
  try {
    const good = app.cache.current!.versionId;
    for (const f of ['services.yaml', 'edge.yaml', 'more.yaml']) rmSync(join(dir, f));
    let outcome = (await app.reload()) as { status: string; diagnostics: { code: string }[] };
    assert.is(outcome.status, 'rejected');
    assert.equal(
      outcome.diagnostics.map((d) => d.code),
      ['FXDS_EMPTY_TREE'],
    );
    assert.is(app.cache.current!.versionId, good, 'still serving the last good version');
    assert.is(app.cache.current!.groups.get('default')!.types.listener.resources.size, 3);

    writeTree({ 'services.yaml': BASE['services.yaml']!, 'more.yaml': TWO_LISTENERS['more.yaml'] }, dir);
    outcome = (await app.reload()) as { status: string; diagnostics: { code: string }[] };
    assert.is(outcome.status, 'rejected');
    assert.equal(
      outcome.diagnostics.map((d) => d.code),
      ['FXDS_MASS_REMOVAL'],
    );

    writeTree({ 'guard.yaml': GUARD('maxRemovalPercent: 100') }, dir);
    outcome = (await app.reload()) as { status: string; diagnostics: { code: string }[] };
    assert.is(outcome.status, 'applied');
    assert.equal([...app.cache.current!.groups.get('default')!.types.listener.resources.keys()], ['admin']);
  } finally {
    await app.close();
  }
});

test('small changes pass: removing one of two listeners is not a mass removal', async () => {
  const dir = writeTree(TWO_LISTENERS);
  const app = await startServer(dir);
  try {
    writeTree({ 'more.yaml': TWO_LISTENERS['more.yaml'].replace('port: 9090', 'port: 9091') }, dir);
    assert.is(((await app.reload()) as { status: string }).status, 'applied');
    rmSync(join(dir, 'more.yaml'));
    assert.is(((await app.reload()) as { status: string }).status, 'applied', '1 of 4 listeners and clusters');
  } finally {
    await app.close();
  }
});

test.run();
