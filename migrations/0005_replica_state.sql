-- What one replica keeps beside its versions: the last shared decision it applied (decisions are
-- shared through PostgreSQL when several replicas run; src/decisions/) and, after a rollback, the
-- tree and model it replaced, so that neither a restart nor a lagging replica serves them again.
CREATE TABLE replica_state (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

-- Shared decisions name versions by model hash (version ids are per replica).
CREATE INDEX config_versions_model ON config_versions (model_hash, id);
