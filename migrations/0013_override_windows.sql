-- Expiring overrides (src/model/expiry.ts) of the newest applied tree: when each was first served,
-- by its content's id, so a `for` window survives restarts; its deadline and whether it has lapsed,
-- so a restart knows when the next one falls due without reading the model. Rows of overrides that
-- left the tree are removed when a tree without them is applied.
CREATE TABLE override_windows (
  id TEXT PRIMARY KEY,
  what TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  deadline INTEGER NOT NULL,
  expired INTEGER NOT NULL DEFAULT 0
);
