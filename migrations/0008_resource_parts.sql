-- Resources made of parts stored by part: a route configuration is one resource whose virtual hosts
-- are encoded one by one (ResourceType.parts), and storing it whole wrote every virtual host again
-- (about 3 MB at 10,000 routes) for a one-route push. Now a new version of such a resource stores
-- the message without its parts field and the keys of its parts; a part is stored once, by content.
CREATE TABLE resource_parts (
  key    TEXT PRIMARY KEY,                     -- sha256 of message name + canonical JSON (the encoder's)
  json   TEXT NOT NULL CHECK (json_valid(json)),
  framed BLOB NOT NULL                         -- the field's bytes (tag, length, message): concatenated as they are
) STRICT, WITHOUT ROWID;

-- For a resource with parts: {"field": "virtual_hosts", "keys": [part keys, in order]}. Its `json` then
-- has null in place of that field, `any` is empty and `rest` holds the message's bytes without the field.
ALTER TABLE encoded_resources ADD COLUMN parts TEXT CHECK (parts IS NULL OR json_valid(parts));
ALTER TABLE encoded_resources ADD COLUMN rest BLOB;
