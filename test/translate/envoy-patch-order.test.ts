/**
 * EnvoyPatch order: document order within a file, files by name, whatever the patches' names; and
 * the groups a patch names. Each patch tests what the one before it set, so any other order fails.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { writeTree } from '../helpers/tree.ts';

const base = `kind: Service
name: api
endpoints: [{ address: 10.0.0.1:80 }]
---
kind: VirtualHost
name: site
domains: ["*"]
routes: [{ to: api }]
---
kind: NodeGroup
name: edge
match: { cluster: edge }
---
kind: Listener
name: l
port: 8080
groups: [default, edge]
virtualHosts: [site]
`;
const step = (name: string, after: string | undefined, key: string, groups = '') =>
  `kind: EnvoyPatch
name: ${name}
${groups}target: { kind: cluster, name: api }
jsonPatch:
${after ? `  - { op: test, path: /metadata/filter_metadata/order/${after}, value: true }\n` : ''}  - { op: add, path: /metadata/filter_metadata/order/${key}, value: true }
`;

test('patches apply by file name, then document order, not by their names', async () => {
  const r = await checkTree(
    writeTree({
      '0-base.yaml': base,
      // The first file by name: its documents in order.
      'a.yaml': [
        'kind: EnvoyPatch\nname: zz\ntarget: { kind: cluster, name: api }\nmerge: { metadata: { filter_metadata: { order: { first: true } } } }\n',
        step('mm', 'first', 'second'),
      ].join('---\n'),
      'b.yaml': step('aa', 'second', 'third'),
    }),
  );
  assert.ok(r.config, r.diagnostics.map(formatDiagnostic).join('\n'));
  const cluster = r.config.groups.get('default')!.types.cluster.resources.get('api')!.json as {
    metadata: { filter_metadata: { order: Record<string, boolean> } };
  };
  assert.equal(Object.keys(cluster.metadata.filter_metadata.order), ['first', 'second', 'third']);
  assert.equal(r.config.patchedBy?.get('default')?.get('cluster/api'), ['zz', 'mm', 'aa']);
});

test('a patch naming groups changes only their resources', async () => {
  const r = await checkTree(
    writeTree({
      '0-base.yaml': base,
      'p.yaml':
        'kind: EnvoyPatch\nname: edge-only\ngroups: [edge]\ntarget: { kind: cluster, name: api }\n' +
        'merge: { connect_timeout: 9s }\n',
    }),
  );
  assert.ok(r.config, r.diagnostics.map(formatDiagnostic).join('\n'));
  const timeout = (g: string) =>
    (r.config!.groups.get(g)!.types.cluster.resources.get('api')!.json as { connect_timeout: string }).connect_timeout;
  assert.is(timeout('edge'), '9s');
  assert.is(timeout('default'), '5s');
});

test.run();
