-- The documents a restart needs before it serves (node groups, secrets, rollouts), stored apart
-- from the packed model: a restart reads them instead of the whole model (tens of milliseconds at
-- 10,000 services), and reads the model when something asks for it. NULL for rows stored before.
ALTER TABLE config_versions ADD COLUMN head_json TEXT CHECK (head_json IS NULL OR json_valid(head_json));
