/**
 * The notary's tables in PostgreSQL, in a schema of their own (default
 * "interlock_notary"). The notary installs them itself (CREATE ... IF NOT
 * EXISTS, idempotent) rather than through the journal's migrations: in the
 * in-transaction form they live in the *service's* database, beside the
 * service's tables, where no `[store]` and no journal migrator ever runs;
 * the notary server and the service's helper each install what they use.
 */
import { quoteSchema } from '../../stores/postgres/identifier.js'

export const DEFAULT_NOTARY_SCHEMA = 'interlock_notary'

export interface Queryable {
  query(sql: string, params?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>
}

export function notarySchemaSql(schema: string): string {
  const s = quoteSchema(schema)
  return `
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.notary_records (
  effect    text    NOT NULL,
  seq       integer NOT NULL,
  attempt   integer NOT NULL,
  kind      text    NOT NULL CHECK (kind IN ('intend', 'claim', 'performed', 'failed', 'abort')),
  writer    text    NOT NULL,
  at        text    NOT NULL,
  body      text    NOT NULL,
  prev      text    NOT NULL,
  signature text    NOT NULL,
  hash      text    NOT NULL,
  PRIMARY KEY (effect, seq)
);
CREATE TABLE IF NOT EXISTS ${s}.notary_decisions (
  effect   text    NOT NULL,
  attempt  integer NOT NULL,
  decision text    NOT NULL CHECK (decision IN ('claim', 'abort')),
  writer   text    NOT NULL,
  seq      integer NOT NULL,
  PRIMARY KEY (effect, attempt)
);`
}

/**
 * Installs the schema. Two installers racing on CREATE ... IF NOT EXISTS can
 * still collide on the catalog's unique index, so the install holds a
 * transaction-scoped advisory lock keyed by the schema's name.
 */
export async function installNotarySchema(db: Queryable, schema: string): Promise<void> {
  await db.query('BEGIN')
  try {
    await db.query("SELECT pg_advisory_xact_lock(hashtextextended('interlock_notary_install:' || $1, 0))", [schema])
    await db.query(notarySchemaSql(schema))
    await db.query('COMMIT')
  } catch (err) {
    await db.query('ROLLBACK').catch(() => undefined)
    throw err
  }
}
