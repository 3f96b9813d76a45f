-- Encoded Envoy resources by content key, and which of them each applied version serves per node
-- group. Lets a restart serve the last good version without translating or encoding anything.
CREATE TABLE encoded_resources (
  key  TEXT PRIMARY KEY,          -- sha256 of kind + canonical JSON (the encoder's cache key)
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  json TEXT NOT NULL CHECK (json_valid(json)),
  any  BLOB NOT NULL              -- google.protobuf.Any bytes
) STRICT, WITHOUT ROWID;

CREATE TABLE version_manifests (
  version_id    INTEGER PRIMARY KEY REFERENCES config_versions (id),
  manifest_json TEXT NOT NULL CHECK (json_valid(manifest_json))  -- {"group": ["key", ...]}
) STRICT;
