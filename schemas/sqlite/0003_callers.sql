-- Interlock callers (SQLite): what the MCP gateway (`interlock mcp-proxy`)
-- keeps of what each caller's threads read, for premises
-- (src/integrations/mcp/reads.ts; schemas/postgres/0006_callers.sql says why).
-- An effect's principal and trace need nothing here: they are fields of its
-- canonical JSON, journaled as every other field is.
--
-- lock: none: a new table; the install holds the journal file's write lock, as every write does.
--
-- Per principal, thread and target, the digest of the last answer of each
-- read (`read` names it: the SHA-256 of its tool and canonical arguments).

CREATE TABLE thread_reads (
  principal TEXT NOT NULL,
  thread    TEXT NOT NULL,
  target    TEXT NOT NULL,
  read      TEXT NOT NULL,
  digest    TEXT NOT NULL,
  read_at   TEXT NOT NULL,
  PRIMARY KEY (principal, thread, target, read)
) WITHOUT ROWID;
