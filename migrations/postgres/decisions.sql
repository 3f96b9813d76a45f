-- The shared decision log (PostgreSQL), used when several fleetxds replicas run: operator
-- decisions in the order they were made, each applied by every replica (src/decisions/).
-- Idempotent: every replica runs it when it connects, under an advisory lock.
CREATE TABLE IF NOT EXISTS fleetxds_decisions (
  seq     BIGSERIAL PRIMARY KEY,
  at      TIMESTAMPTZ NOT NULL DEFAULT now(),
  replica TEXT NOT NULL,
  actor   TEXT NOT NULL,
  body    JSONB NOT NULL
);
