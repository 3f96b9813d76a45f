-- Type manifests by chunk: a stored type listed all its resources' keys (700 KB at 10,000 clusters and
-- their endpoints) for every version that changed one of them. A new type_manifests row now holds
-- {"chunks": [hashes]}: the keys of a run of resources in name order, cut where the names say
-- (src/snapshot/key-chunks.ts), stored once by content here. Older rows keep their list of keys.
CREATE TABLE key_chunks (
  hash      TEXT PRIMARY KEY,                            -- the first 16 hex digits of sha256 of the keys, one per line
  keys_json TEXT NOT NULL CHECK (json_valid(keys_json))  -- the keys, in name order
) STRICT, WITHOUT ROWID;
