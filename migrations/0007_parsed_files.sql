-- Parsed YAML files by content, so that no restart parses an unchanged file again: parsing is most
-- of a cold start (about 2.4 s for 10,000 services) and of the first push after a restart. A cache:
-- any row may be dropped, and only the parses of the tree last read are kept.
CREATE TABLE parsed_files (
  file   TEXT NOT NULL,  -- path inside the config tree
  hash   TEXT NOT NULL,  -- sha256 of the file's bytes
  parser TEXT NOT NULL,  -- the yaml package version and our parse format; rows of another are unused
  data   BLOB NOT NULL,  -- the documents and diagnostics, v8-serialized (keeps NaN, Infinity, -0)
  PRIMARY KEY (file, hash)
) STRICT;
