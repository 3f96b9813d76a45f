/**
 * A pipeline's build reuses what did not change: the assembler's lists, the check memo, section
 * translations and encodings (src/translate/index.ts, src/snapshot/encoder.ts). Over any sequence
 * of edits, what it builds must be what a build from nothing builds for the same tree: the same
 * groups, and per type the same version and resources.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PipelineCaches } from '../../src/compile/caches.ts';
import type { ParsedFile } from '../../src/model/sources.ts';
import { validateSourceSet } from '../../src/model/validate.ts';
import { buildConfig, freshBuildCaches } from '../../src/snapshot/build.ts';
import type { GroupSnapshot } from '../../src/snapshot/group-snapshot.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { parseYamlFile } from '../../src/source/parse-yaml.ts';

const service = (n: number, ip: number) => `kind: Service\nname: s${n}\nendpoints:\n  - address: 10.0.0.${ip}:80\n`;
const vhost = (v: number, routes: [string, number][]) =>
  `kind: VirtualHost\nname: vh${v}\ndomains: [vh${v}.example.com]\nroutes:\n` +
  routes.map(([p, s]) => `  - { match: { prefix: /${p}/ }, to: ${s < 0 ? 'agg' : `s${s}`} }\n`).join('');
const listener = (name: string, port: number, vhosts: number[], group?: string) =>
  `kind: Listener\nname: ${name}\nport: ${port}\n${group ? `groups: [${group}]\n` : ''}` +
  `virtualHosts: [${vhosts.map((v) => `vh${v}`).join(', ')}]\n`;
const grpc = (n: number, s: number) => `kind: GrpcService\nname: g${n}\ntarget: g${n}.svc\nroutes:\n  - to: s${s}\n`;

function summary(groups: ReadonlyMap<string, GroupSnapshot>) {
  return [...groups].map(([name, g]) => [
    name,
    Object.values(g.types).map((t) => [t.kind, t.version, [...t.resources.values()].map((r) => r.key)]),
  ]);
}

test('a sequence of random edits: every build is what a build from nothing gives', () => {
  let seed = 11;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), (seed >>> 16) % n);
  const services = new Map<number, number>(Array.from({ length: 12 }, (_, i) => [i, i + 1]));
  const vhosts = new Map<number, [string, number][]>([
    [
      0,
      [
        ['a', 0],
        ['b', 1],
      ],
    ],
    [1, [['c', 2]]],
  ]);
  const listeners = new Map<string, { port: number; vhosts: number[]; group?: string }>([
    ['edge', { port: 8080, vhosts: [0, 1] }],
  ]);
  const grpcs = new Map<number, number>();
  /** The members of the aggregate service `agg` (routes to -1 go to it). */
  let aggregate: [number, number] | undefined;
  let canary = false;
  /** Runtime values (a Runtime document when any): they change only the runtime layer. */
  const runtime = new Map<string, number>();
  const texts = () => {
    const t = new Map<string, string>();
    t.set('services.yaml', [...services].map(([n, ip]) => service(n, ip)).join('---\n'));
    // In a file of its own: an edit of services.yaml then changes its members' documents only.
    if (aggregate)
      t.set('aggregate.yaml', `kind: Service\nname: agg\naggregate: [s${aggregate[0]}, s${aggregate[1]}]\n`);
    t.set('routes.yaml', [...vhosts].map(([v, r]) => vhost(v, r)).join('---\n'));
    t.set(
      'listeners.yaml',
      [
        ...[...listeners].map(([n, l]) => listener(n, l.port, l.vhosts, l.group)),
        ...(canary ? ['kind: NodeGroup\nname: canary\nmatch: { cluster: canary }\n'] : []),
      ].join('---\n'),
    );
    if (grpcs.size) t.set('grpc.yaml', [...grpcs].map(([n, s]) => grpc(n, s)).join('---\n'));
    if (runtime.size)
      t.set(
        'runtime.yaml',
        `kind: Runtime\nname: rt\nvalues: { ${[...runtime].map(([k, v]) => `${k}: ${v}`).join(', ')} }\n`,
      );
    return t;
  };
  const parses = new Map<string, ParsedFile>();
  const source = () => {
    const files = [...texts()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([f, text]) => {
        let p = parses.get(f);
        if (!p || p.text !== text) parses.set(f, (p = parseYamlFile(f, text)));
        return p;
      });
    return { root: '/cfg', treeHash: '', files, diagnostics: [] };
  };
  const caches = new PipelineCaches();
  let previous: ReadonlyMap<string, GroupSnapshot> | undefined;
  let built = 0;
  for (let step = 0; step < 300; step++) {
    const op = rnd(13);
    const s = rnd(16); // a few of these do not exist: dangling routes make some trees invalid
    if (op === 0)
      services.set(rnd(14), rnd(250) + 1); // endpoint change, or a new service
    else if (op === 1) services.delete(rnd(14));
    else if (op === 2)
      vhosts.get(rnd(2))!.push([`p${rnd(50)}`, rnd(4) ? s : -1]); // a route, maybe to a new service or `agg`
    else if (op === 3) {
      const r = vhosts.get(rnd(2))!;
      if (r.length > 1) r.splice(rnd(r.length), 1);
    } else if (op === 4) {
      const r = vhosts.get(rnd(2))!;
      if (r.length) r[rnd(r.length)]![0] = `q${rnd(50)}`; // a prefix edit: the services used stay the same
    } else if (op === 5) {
      canary = true;
      listeners.set('canary-edge', { port: 9090, vhosts: [rnd(2)], group: 'canary' });
    } else if (op === 6) {
      listeners.delete('canary-edge');
      canary = rnd(2) === 0;
    } else if (op === 7) grpcs.set(rnd(3), s);
    else if (op === 8) grpcs.delete(rnd(3));
    else if (op === 9) {
      // An aggregate, or new members for it: its members get clusters only through it.
      const a = rnd(14);
      const b = rnd(14);
      if (a !== b) aggregate = [a, b];
    } else if (op === 10) runtime.set(`k${rnd(4)}.v`, rnd(100));
    else if (op === 11) runtime.delete(`k${rnd(4)}.v`);
    else aggregate = undefined;
    // Keep most trees valid: routes and gRPC services to services that do not exist are dropped half the time.
    if (rnd(2)) {
      for (const r of vhosts.values())
        for (let i = r.length - 1; i >= 0; i--) {
          const to = r[i]![1];
          if (to < 0 ? !aggregate || !aggregate.every((m) => services.has(m)) : !services.has(to)) r.splice(i, 1);
        }
      for (const [g, t] of grpcs) if (!services.has(t)) grpcs.delete(g);
    }
    const src = source();
    const kept = validateSourceSet(src, caches.assembler, caches.checks);
    const fresh = validateSourceSet(src);
    assert.equal(kept.diagnostics.map(formatDiagnostic), fresh.diagnostics.map(formatDiagnostic), `step ${step}`);
    if (!kept.model) continue;
    const a = buildConfig(kept.model, caches, undefined, new Map(), previous);
    const b = buildConfig(fresh.model!, freshBuildCaches());
    assert.equal(summary(a.config!.groups), summary(b.config!.groups), `step ${step}`);
    previous = a.config!.groups;
    built++;
  }
  assert.ok(built > 100, `${built} trees were built`);
});

test('a Runtime edit changes the runtime layer of its groups and nothing else', () => {
  const caches = new PipelineCaches();
  // The same parse of the unchanged file: its documents are the same objects in both trees.
  const kept = parseYamlFile(
    'a.yaml',
    `${service(1, 1)}---\n${vhost(0, [['a', 1]])}---\n${listener('edge', 8080, [0])}`,
  );
  const tree = (value: number) => ({
    root: '/cfg',
    treeHash: '',
    files: [
      kept,
      parseYamlFile('rt.yaml', `kind: Runtime\nname: rt\nvalues: { upstream.healthy_panic_threshold: ${value} }\n`),
    ],
    diagnostics: [],
  });
  const one = buildConfig(validateSourceSet(tree(10), caches.assembler, caches.checks).model!, caches);
  const two = buildConfig(
    validateSourceSet(tree(20), caches.assembler, caches.checks).model!,
    caches,
    undefined,
    new Map(),
    one.config!.groups,
  );
  const [a, b] = [one, two].map((r) => r.config!.groups.get('default')!);
  for (const kind of ['cluster', 'endpoint', 'listener', 'route'] as const)
    assert.is(b!.types[kind], a!.types[kind], kind);
  assert.equal(
    [...b!.types.runtime.resources.values()].map((r) => r.json),
    [
      { name: 'fleetxds', layer: { 'upstream.healthy_panic_threshold': 20 } },
      { name: 'fleetxds-overrides', layer: {} },
    ],
  );
});

test("an edit to a service only an aggregate reaches changes that service's cluster, and only that one", () => {
  const caches = new PipelineCaches();
  // The aggregate in a file of its own: an edit of services.yaml changes the members' documents only.
  const routes = parseYamlFile(
    'routes.yaml',
    `${vhost(0, [['a', -1]])}---\n${listener('edge', 8080, [0])}---\nkind: Service\nname: agg\naggregate: [s1, s2]\n`,
  );
  const build = (ip: number, previous?: ReadonlyMap<string, GroupSnapshot>) => {
    const src = {
      root: '/cfg',
      treeHash: '',
      files: [routes, parseYamlFile('services.yaml', `${service(1, 1)}---\n${service(2, ip)}`)],
      diagnostics: [],
    };
    const kept = validateSourceSet(src, caches.assembler, caches.checks);
    assert.equal(kept.diagnostics.map(formatDiagnostic), []);
    const a = buildConfig(kept.model!, caches, undefined, new Map(), previous).config!.groups;
    const b = buildConfig(validateSourceSet(src).model!, freshBuildCaches()).config!.groups;
    assert.equal(summary(a), summary(b));
    return a;
  };
  const first = build(2);
  const endpoints = (g: ReadonlyMap<string, GroupSnapshot>) => [...g.get('default')!.types.endpoint.resources.keys()];
  assert.equal(endpoints(first), ['s1', 's2']);
  const next = build(9, first);
  assert.equal(endpoints(next), ['s1', 's2']);
  assert.is.not(
    next.get('default')!.types.endpoint.resources.get('s2')!.key,
    first.get('default')!.types.endpoint.resources.get('s2')!.key,
  );
});

test('a kept check is run again when a service it named changes in another file', () => {
  const caches = new PipelineCaches();
  const services = (ns: number[]) => ns.map((n) => service(n, n + 1)).join('---\n');
  const routes = parseYamlFile('routes.yaml', `${vhost(0, [['a', 1]])}---\n${listener('edge', 8080, [0])}`);
  const check = (ns: number[]) => {
    const src = {
      root: '/cfg',
      treeHash: '',
      files: [routes, parseYamlFile('services.yaml', services(ns))],
      diagnostics: [],
    };
    return validateSourceSet(src, caches.assembler, caches.checks).diagnostics.map(formatDiagnostic);
  };
  assert.equal(check([0, 1, 2]), []);
  // routes.yaml is the same parse: its virtual host is the same object, checked again because s1 is gone.
  assert.match(check([0, 2]).join('\n'), /routes\[0\]\.to: service "s1" does not exist/);
  assert.equal(check([0, 1, 2]), []);
});

test.run();
