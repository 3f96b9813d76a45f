-- Versions stored in proportion to what changed (a 10,000-service push wrote a 4 MB model and a
-- 1 MB manifest before, whatever the change):
--  * the model by source file, content-addressed: a one-file push stores that file's documents;
--    the version row's model_json then names its chunks ({"packed":1,...});
--  * the manifest by resource type, keyed by the type's content version: a type that did not
--    change is not written again; version_manifests then holds {"typed":1,...}.
-- Rows written before keep the whole model and the full manifest, and are read as they are.
CREATE TABLE model_chunks (
  hash TEXT PRIMARY KEY,
  json TEXT NOT NULL
) STRICT;

CREATE TABLE type_manifests (
  type_key  TEXT PRIMARY KEY,
  keys_json TEXT NOT NULL
) STRICT;
