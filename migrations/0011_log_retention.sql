-- The NACK, rejection and audit logs are bounded and expire (src/store/retention.ts): their pruning
-- deletes by age, and a NACK is stored once per node, type and version, at most so many per version.
CREATE INDEX nack_events_at ON nack_events (at);
CREATE INDEX nack_events_version ON nack_events (type_url, version);
CREATE INDEX audit_log_at ON audit_log (at);
