-- Endpoints registered at run time, shared by the fleetxds replicas (src/membership/): one row per
-- service and address; last_seen is the newest heartbeat any replica received. Idempotent.
CREATE TABLE IF NOT EXISTS fleetxds_registrations (
  service    TEXT NOT NULL,
  address    TEXT NOT NULL,
  entry      JSONB NOT NULL,
  last_seen  BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (service, address)
);
