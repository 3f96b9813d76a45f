-- Node groups held at an applied version while the rest of the fleet moves on.
CREATE TABLE group_pins (
  node_group TEXT PRIMARY KEY,
  version_id INTEGER NOT NULL REFERENCES config_versions (id),
  pinned_at  TEXT NOT NULL,
  actor      TEXT NOT NULL
) STRICT;

-- Every operator action that changes what is served (rollback, pin, unpin).
CREATE TABLE audit_log (
  id     INTEGER PRIMARY KEY,
  at     TEXT NOT NULL,
  actor  TEXT NOT NULL,
  action TEXT NOT NULL,
  detail TEXT NOT NULL
) STRICT;
