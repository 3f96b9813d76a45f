/**
 * Expiring overrides (src/model/expiry.ts), table-driven: what a tree serves at a given time given
 * when its overrides started, what is refused, what is only warned about, and what each lapse
 * removes from the model.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { overridesOf } from '../../src/model/expiry.ts';
import type { Model } from '../../src/model/types.ts';
import { writeTree } from '../helpers/tree.ts';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const HOUR = 3_600_000;

const head = `kind: Service\nname: api\nendpoints: [{ address: 10.0.1.1:80 }]\n---
kind: Listener\nname: main\nport: 10000\nvirtualHosts: [shop]\n---\n`;

function tree(vhost: string, runtimes = ''): string {
  return writeTree({ 'tree.yaml': `${head}kind: VirtualHost\nname: shop\ndomains: ["*"]\n${vhost}${runtimes}` });
}

/** The ids of a tree's overrides, in document order (from a check that serves them all). */
async function idsOf(dir: string): Promise<string[]> {
  // Before any deadline of these trees: every override is served.
  const r = await checkTree(dir, undefined, { clock: { now: NOW - 10 * HOUR, started: new Map() } });
  assert.ok(r.model, JSON.stringify(r.diagnostics));
  return overridesOf(r.model).map((o) => o.id);
}

interface Row {
  name: string;
  vhost: string;
  runtimes?: string;
  /** Start times of the tree's overrides, by their index in document order (ms before NOW). */
  startedAgo?: Record<number, number>;
  /** An error (its message and line) refuses the tree. */
  refused?: { message: RegExp; line: number };
  /** Warnings (message, line), expired and active counts, and what the served model holds. */
  warned?: { message: RegExp; line: number }[];
  expired?: number;
  active?: number;
  deadlines?: string[];
  served?: (m: Model) => void;
}

const shop = (m: Model) => m.virtualHosts.find((v) => v.name === 'shop')!;

const ROWS: Row[] = [
  {
    name: 'a new `for` window starts now',
    vhost: 'routes:\n  - { match: { prefix: /m }, directResponse: { status: 503 }, for: 1h }\n  - { to: api }\n',
    active: 1,
    expired: 0,
    deadlines: ['2026-06-01T13:00:00.000Z'],
    served: (m) => assert.is(shop(m).routes.length, 2),
  },
  {
    name: 'a `for` window counts from when it started, not from now',
    vhost: 'routes:\n  - { match: { prefix: /m }, directResponse: { status: 503 }, for: 1h }\n  - { to: api }\n',
    startedAgo: { 0: HOUR / 2 },
    active: 1,
    deadlines: ['2026-06-01T12:30:00.000Z'],
  },
  {
    name: 'a lapsed route is left out, and the tree is warned about at its line',
    vhost: 'routes:\n  - { match: { prefix: /m }, directResponse: { status: 503 }, for: 1h }\n  - { to: api }\n',
    startedAgo: { 0: 2 * HOUR },
    active: 0,
    expired: 1,
    warned: [{ message: /route 1 of VirtualHost "shop" expired at 2026-06-01T11:00:00.000Z/, line: 14 }],
    served: (m) => assert.equal(shop(m).routes, [{ to: 'api' }]),
  },
  {
    name: 'an `until` already past is refused when it was never served',
    vhost: 'routes:\n  - { match: { prefix: /m }, to: api, until: "2026-06-01T11:00:00Z" }\n  - { to: api }\n',
    refused: { message: /is in the past \(2026-06-01T11:00:00.000Z\): it would never be served/, line: 14 },
  },
  {
    name: 'an `until` past that was served lapses with a warning',
    vhost: 'routes:\n  - { match: { prefix: /m }, to: api, until: "2026-06-01T11:00:00Z" }\n  - { to: api }\n',
    startedAgo: { 0: 2 * HOUR },
    expired: 1,
    warned: [{ message: /expired at 2026-06-01T11:00:00.000Z and is no longer served/, line: 14 }],
  },
  {
    name: "a route's lapsed fault window is dropped; the virtual host's fault applies again",
    vhost:
      'fault: { abort: { status: 500, percent: 1 } }\nroutes:\n' +
      '  - { match: { prefix: /c }, to: api, fault: { abort: { status: 503, percent: 100 }, for: 10m } }\n' +
      '  - { to: api }\n',
    startedAgo: { 0: HOUR },
    expired: 1,
    warned: [{ message: /the fault of route 1 of VirtualHost "shop" expired/, line: 15 }],
    served: (m) => {
      assert.is(shop(m).routes[0]!.fault, undefined);
      assert.ok(shop(m).fault);
    },
  },
  {
    name: "a virtual host's lapsed fault window is dropped, its routes stay",
    vhost: 'fault: { delay: { fixed: 1s, percent: 50 }, for: 10m }\nroutes:\n  - { to: api }\n',
    startedAgo: { 0: HOUR },
    expired: 1,
    served: (m) => {
      assert.is(shop(m).fault, undefined);
      assert.is(shop(m).routes.length, 1);
    },
  },
  {
    name: 'a lapsed Runtime override is left out; the base document stays',
    vhost: 'routes:\n  - { to: api }\n',
    runtimes:
      '---\nkind: Runtime\nname: base\nvalues: { a.key: 1 }\n' +
      '---\nkind: Runtime\nname: raise\nvalues: { a.key: 2 }\nfor: 5m\n',
    startedAgo: { 0: HOUR },
    expired: 1,
    served: (m) =>
      assert.equal(
        (m.runtimes ?? []).map((r) => r.name),
        ['base'],
      ),
  },
  {
    name: 'a virtual host whose every route has a deadline is refused: nothing to return to',
    vhost: 'routes:\n  - { match: { prefix: /m }, to: api, for: 1h }\n  - { to: api, for: 2h }\n',
    refused: { message: /every route of VirtualHost "shop" has a deadline/, line: 15 },
  },
];

for (const row of ROWS)
  test(row.name, async () => {
    const dir = tree(row.vhost, row.runtimes);
    const ids = row.refused ? [] : await idsOf(dir);
    const started = new Map(Object.entries(row.startedAgo ?? {}).map(([i, ago]) => [ids[Number(i)]!, NOW - ago]));
    const r = await checkTree(dir, undefined, { clock: { now: NOW, started } });
    if (row.refused) {
      assert.is(r.model, undefined);
      const e = r.diagnostics.find((d) => d.severity === 'error');
      assert.ok(e, JSON.stringify(r.diagnostics));
      assert.match(e.message, row.refused.message);
      assert.is(e.location?.line, row.refused.line, e.message);
      return;
    }
    assert.ok(r.model && r.expiry, JSON.stringify(r.diagnostics));
    const warnings = r.diagnostics.filter((d) => d.severity === 'warning');
    assert.is(warnings.length, row.warned?.length ?? warnings.length);
    row.warned?.forEach((w, i) => {
      assert.match(warnings[i]!.message, w.message);
      assert.is(warnings[i]!.location?.line, w.line);
    });
    if (row.active !== undefined) assert.is(r.expiry.active.length, row.active);
    if (row.expired !== undefined) assert.is(r.expiry.expired.length, row.expired);
    if (row.deadlines)
      assert.equal(
        r.expiry.active.map((w) => new Date(w.deadline).toISOString()),
        row.deadlines,
      );
    row.served?.(r.model);
  });

test('an edited override is a new one: its window starts again', async () => {
  const a = await idsOf(tree('routes:\n  - { match: { prefix: /m }, to: api, for: 1h }\n  - { to: api }\n'));
  const same = await idsOf(tree('routes:\n  - { match: { prefix: /m }, to: api, for: 1h }\n  - { to: api }\n'));
  const edited = await idsOf(tree('routes:\n  - { match: { prefix: /m }, to: api, for: 2h }\n  - { to: api }\n'));
  assert.equal(a, same);
  assert.is.not(a[0], edited[0]);
});

test('without a history (`fleetxds validate`), a past `until` is refused and a lapsed `for` cannot occur', async () => {
  const r = await checkTree(
    tree('routes:\n  - { match: { prefix: /m }, to: api, until: "2020-01-01T00:00:00Z" }\n  - { to: api }\n'),
  );
  assert.is(r.model, undefined);
  const ok = await checkTree(tree('routes:\n  - { match: { prefix: /m }, to: api, for: 1s }\n  - { to: api }\n'));
  assert.ok(ok.model);
  assert.is(ok.expiry?.active.length, 1);
});

test.run();
