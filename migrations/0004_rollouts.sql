-- Staged rollouts: one row per rollout, its state machine's state as JSON (src/rollout/state.ts),
-- so a restart resumes a rollout where it was.
CREATE TABLE rollouts (
  id           INTEGER PRIMARY KEY,
  from_version INTEGER NOT NULL REFERENCES config_versions (id),
  to_version   INTEGER NOT NULL REFERENCES config_versions (id),
  status       TEXT NOT NULL,
  state_json   TEXT NOT NULL,
  updated_at   TEXT NOT NULL
) STRICT;

CREATE INDEX rollouts_status ON rollouts (status);
