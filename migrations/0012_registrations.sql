-- Endpoints registered at run time (src/membership): one row per service and address, written when
-- membership or health changes (not on every heartbeat), read back at start.
CREATE TABLE registrations (
  service TEXT NOT NULL,
  address TEXT NOT NULL,
  entry TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (service, address)
);
