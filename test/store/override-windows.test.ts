/**
 * The overrides of the newest applied tree, kept across restarts: an override keeps the start it
 * was first recorded with, its lapse is recorded, and overrides that left the tree are forgotten.
 */
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openStores } from '../../src/store/database.ts';
import { tempDir } from '../helpers/tree.ts';

const w = (id: string, startedAt: number, expired = false) => ({
  id,
  what: `route ${id}`,
  startedAt,
  deadline: startedAt + 60_000,
  expired,
});

test('a kept override keeps its first start; a lapse is recorded; one that left the tree is forgotten; across a reopen', () => {
  const path = join(tempDir(), 'state.db');
  let stores = openStores(path);
  stores.overrideWindows.keep([w('a', 1000), w('b', 2000)]);
  // The next tree: "a" again (started later as far as this check knows), "b" gone, "c" new, "a" lapsed.
  stores.overrideWindows.keep([{ ...w('a', 5000), deadline: 61_000, expired: true }, w('c', 5000)]);
  stores.close();
  stores = openStores(path);
  try {
    assert.equal(
      stores.overrideWindows.list().map((x) => [x.id, x.startedAt, x.deadline, x.expired]),
      [
        ['a', 1000, 61_000, true],
        ['c', 5000, 65_000, false],
      ],
    );
    assert.equal(
      [...stores.overrideWindows.started()],
      [
        ['a', 1000],
        ['c', 5000],
      ],
    );
    stores.overrideWindows.keep([]);
    assert.equal(stores.overrideWindows.list(), []);
  } finally {
    stores.close();
  }
});

test.run();
