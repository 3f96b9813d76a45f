/**
 * How one replica applies a decision named by content (src/app/pipeline.ts `decide`), whoever made
 * it: the rules that keep replicas that apply pushes and decisions in different orders on the same
 * version. Table-driven over a real pipeline (no PostgreSQL: the shared log only carries these).
 */
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import type { Decision, DecisionResult } from '../../src/decision-log/decision.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

const tree = (timeout: string) => ({
  ...BASE,
  'services.yaml': BASE['services.yaml']!.replace('name: api\n', `name: api\nconnectTimeout: ${timeout}\n`),
});
const ROLLOUT =
  'kind: Rollout\nname: r\nstages:\n  - name: canary\n    select: { idPattern: "canary-*" }\nacceptUnauthenticatedNodes: true\n';
const NEVER = 'f'.repeat(64);

interface World {
  app: RunningApp;
  dir: string;
  /** Applies a tree with this api timeout; its model hash. */
  push(timeout: string, extra?: Record<string, string>): Promise<string>;
  /** The api timeout served to the default group now. */
  served(): string | undefined;
}

async function world(database = join(tempDir(), 'x.db'), dir = writeTree(BASE)): Promise<World> {
  const app = await startServer(dir, { database });
  return {
    app,
    dir,
    async push(timeout, extra = {}) {
      writeTree({ ...tree(timeout), ...extra }, dir);
      const out = (await app.reload()) as { status: string; versionId: number };
      return app.stores.revisions.get(out.versionId)!.modelHash;
    },
    served() {
      const cds = app.cache.current!.groups.get('default')!.types.cluster.resources.get('api')!;
      return (cds.json as { connect_timeout?: string }).connect_timeout;
    },
  };
}

interface Row {
  name: string;
  /** Builds the situation and the decision to apply. */
  given(w: World): Promise<Decision>;
  expect: DecisionResult['status'];
  reason?: RegExp;
  /** Afterwards: what the replica serves, then after it reads the directory again. */
  then?(w: World): Promise<void>;
}

const rows: Row[] = [
  {
    name: 'rollback to a version never applied here: missing, nothing changes',
    given: async (w) => ({ kind: 'rollback', to: NEVER, replaces: await w.push('1s') }),
    expect: 'missing',
    reason: /never applied on this replica/,
    then: async (w) => assert.is(w.served(), '1s'),
  },
  {
    name: 'rollback of the version served: applied',
    given: async (w) => {
      const v1 = await w.push('1s');
      return { kind: 'rollback', to: v1, replaces: await w.push('2s') };
    },
    expect: 'applied',
    then: async (w) => {
      assert.is(w.served(), '1s');
      assert.is(((await w.app.reload()) as { status: string }).status, 'unchanged', 'the directory does not undo it');
    },
  },
  {
    name: 'rollback of a push not yet applied here: applied, and that push is skipped when it arrives',
    given: async (w) => {
      const v1 = await w.push('1s');
      return { kind: 'rollback', to: v1, replaces: await hashOf('2s') };
    },
    expect: 'applied',
    then: async (w) => {
      await w.push('2s');
      assert.is(w.served(), '1s', 'the reverted push is not served');
      await w.push('3s');
      assert.is(w.served(), '3s', 'the next push is');
    },
  },
  {
    name: 'rollback of a version this replica has moved past: skipped',
    given: async (w) => {
      const v1 = await w.push('1s');
      const v2 = await w.push('2s');
      await w.push('3s');
      return { kind: 'rollback', to: v1, replaces: v2 };
    },
    expect: 'skipped',
    reason: /superseded/,
    then: async (w) => assert.is(w.served(), '3s'),
  },
  {
    name: 'pin of a group that exists nowhere: skipped',
    given: async (w) => ({ kind: 'pin', group: 'nope', to: await w.push('1s') }),
    expect: 'skipped',
    reason: /no node group "nope"/,
  },
  {
    name: 'pin to a version never applied here: missing',
    given: async (w) => (await w.push('1s'), { kind: 'pin', group: 'default', to: NEVER }),
    expect: 'missing',
  },
  {
    name: 'unpin of a group not pinned: skipped',
    given: async (w) => (await w.push('1s'), { kind: 'unpin', group: 'default' }),
    expect: 'skipped',
    reason: /not pinned/,
  },
  {
    name: 'a rollout transition with no rollout under way: skipped',
    given: async (w) => ({
      kind: 'rollout',
      to: await w.push('1s'),
      stage: 0,
      status: 'progressing',
      event: { type: 'promote' },
    }),
    expect: 'skipped',
    reason: /no rollout/,
  },
  {
    name: 'a transition of another rollout: skipped',
    given: async (w) => {
      await w.push('1s', { 'rollout.yaml': ROLLOUT });
      await w.push('2s', { 'rollout.yaml': ROLLOUT });
      return { kind: 'rollout', to: NEVER, stage: 0, status: 'progressing', event: { type: 'promote' } };
    },
    expect: 'skipped',
    reason: /another rollout/,
  },
  {
    name: 'a transition decided in a state this replica is past: skipped (applied once)',
    given: async (w) => {
      await w.push('1s', { 'rollout.yaml': ROLLOUT });
      const to = await w.push('2s', { 'rollout.yaml': ROLLOUT });
      await w.app.pipeline.decide(
        { kind: 'rollout', to, stage: 0, status: 'progressing', event: { type: 'halt' } },
        'a',
      );
      return { kind: 'rollout', to, stage: 0, status: 'progressing', event: { type: 'halt' } };
    },
    expect: 'skipped',
    reason: /past the state/,
  },
];

/** The model hash a tree would have, from a scratch replica. */
async function hashOf(timeout: string): Promise<string> {
  const w = await world();
  try {
    return await w.push(timeout);
  } finally {
    await w.app.close();
  }
}

for (const row of rows) {
  test(row.name, async () => {
    const w = await world();
    try {
      const decision = await row.given(w);
      const result = await w.app.pipeline.decide(decision, 'test');
      assert.is(result.status, row.expect, JSON.stringify(result));
      if (row.reason) assert.match('reason' in result ? result.reason : '', row.reason);
      await row.then?.(w);
    } finally {
      await w.app.close();
    }
  });
}

test('a restart keeps a rollback: the reverted tree, still in the directory, is not applied again', async () => {
  const database = join(tempDir(), 'restart.db');
  const w = await world(database);
  const v1 = await w.push('1s');
  const v2 = await w.push('2s');
  assert.is((await w.app.pipeline.decide({ kind: 'rollback', to: v1, replaces: v2 }, 'ops')).status, 'applied');
  await w.app.close();
  const again = await world(database, w.dir);
  try {
    assert.is(again.served(), '1s');
  } finally {
    await again.app.close();
  }
});

test.run();
