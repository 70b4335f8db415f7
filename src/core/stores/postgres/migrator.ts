/**
 * Applies the PostgreSQL migrations in one transaction under a transaction-
 * scoped advisory lock keyed by the schema name: two `interlock install` runs
 * at once (two DBAs, a cron job and a deploy) run one after the other, and
 * the second finds nothing to do. DDL is transactional in PostgreSQL, so a
 * failed migration leaves the schema as it was.
 */
import type pg from 'pg'
import { sha256Hex } from '../../hash.js'
import { assessSchema, fileName, loadMigrations, type Migration, type MigrationInfo, type SchemaAssessment } from '../migrations.js'
import { pgError } from './errors.js'
import { quoteSchema, withSchema } from './identifier.js'

export interface PostgresMigrationRun extends SchemaAssessment {
  applied: Migration[]
}

/**
 * The schema, created only when missing: CREATE SCHEMA checks the right to
 * create schemas in the database before it looks whether the schema exists,
 * even with IF NOT EXISTS, so an installer a DBA gave a schema of its own
 * (CREATE SCHEMA ... AUTHORIZATION, `install --print-grants --installer`)
 * needs no such right.
 */
function bootstrap(schema: string): string {
  const q = quoteSchema(schema)
  return `DO $$ BEGIN
  IF to_regnamespace('${q}') IS NULL THEN
    CREATE SCHEMA ${q};
  END IF;
END $$;
CREATE TABLE IF NOT EXISTS ${q}.schema_migrations (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  checksum   text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);`
}

/** A stable 63-bit advisory-lock key per schema (computed here, not by a server function that could change). */
export function installLockKey(schema: string): string {
  return BigInt(`0x${sha256Hex(`interlock install ${schema}`).slice(0, 15)}`).toString()
}

export async function readAppliedPostgres(client: pg.ClientBase, schema: string): Promise<MigrationInfo[]> {
  const q = quoteSchema(schema)
  const { rows } = await client.query<{ t: string | null }>(`SELECT to_regclass($1) AS t`, [`${q}.schema_migrations`])
  if (!rows[0]?.t) return []
  const applied = await client.query<MigrationInfo>(`SELECT version, name, checksum FROM ${q}.schema_migrations ORDER BY version`)
  return applied.rows
}

export async function migratePostgres(
  client: pg.ClientBase,
  schema: string,
  where: string,
  options: { dryRun?: boolean } = {},
): Promise<PostgresMigrationRun> {
  const q = quoteSchema(schema)
  try {
    if (options.dryRun) return { ...assessSchema('postgres', await readAppliedPostgres(client, schema), where), applied: [] }
    await client.query('BEGIN')
    try {
      await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [installLockKey(schema)])
      await client.query(bootstrap(schema))
      const plan = assessSchema('postgres', await readAppliedPostgres(client, schema), where)
      for (const m of plan.pending) {
        await client.query(withSchema(m.sql, schema))
        await client.query(`INSERT INTO ${q}.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)`, [m.version, m.name, m.checksum])
      }
      await client.query('COMMIT')
      return { ...plan, applied: plan.pending, pending: [] }
    } catch (e) {
      await client.query('ROLLBACK').catch(() => {})
      throw e
    }
  } catch (e) {
    throw pgError(e, 'installing the schema', where)
  }
}

/** The full install as one script, for review or a first install by hand (`interlock install --print-sql`). */
export function postgresInstallSql(schema: string): string {
  const q = quoteSchema(schema)
  const parts = ['BEGIN;', '', `SELECT pg_advisory_xact_lock(${installLockKey(schema)});`, '', bootstrap(schema), '']
  for (const m of loadMigrations('postgres')) {
    parts.push(`-- ${fileName(m)}`, withSchema(m.sql, schema).trimEnd(), '')
    parts.push(`INSERT INTO ${q}.schema_migrations (version, name, checksum) VALUES (${m.version}, '${m.name}', '${m.checksum}');`, '')
  }
  parts.push('COMMIT;', '')
  return parts.join('\n')
}
