-- Every applied config version, with the validated model it was built from.
CREATE TABLE config_versions (
  id            INTEGER PRIMARY KEY,
  tree_hash     TEXT NOT NULL,
  model_hash    TEXT NOT NULL,
  source_kind   TEXT NOT NULL CHECK (source_kind IN ('directory', 'git', 'rollback')),
  source        TEXT NOT NULL,
  commit_sha    TEXT,
  author        TEXT,
  subject       TEXT,
  applied_at    TEXT NOT NULL,
  model_json    TEXT NOT NULL CHECK (json_valid(model_json)),
  warnings_json TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(warnings_json))
) STRICT;

-- Trees that failed validation: never served, kept so operators can see why.
CREATE TABLE rejected_trees (
  id               INTEGER PRIMARY KEY,
  tree_hash        TEXT NOT NULL,
  source           TEXT NOT NULL,
  rejected_at      TEXT NOT NULL,
  diagnostics_json TEXT NOT NULL CHECK (json_valid(diagnostics_json))
) STRICT;
CREATE INDEX rejected_trees_at ON rejected_trees (rejected_at);

-- NACKs reported by clients (error_detail of a DiscoveryRequest), per node and type.
CREATE TABLE nack_events (
  id           INTEGER PRIMARY KEY,
  at           TEXT NOT NULL,
  node_id      TEXT NOT NULL,
  node_cluster TEXT NOT NULL,
  node_group   TEXT NOT NULL,
  transport    TEXT NOT NULL,
  type_url     TEXT NOT NULL,
  version      TEXT NOT NULL,
  nonce        TEXT NOT NULL,
  error_code   INTEGER NOT NULL,
  message      TEXT NOT NULL
) STRICT;
CREATE INDEX nack_events_node ON nack_events (node_id, at);
