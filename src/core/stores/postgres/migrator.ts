/**
 * Applies the PostgreSQL migrations, beside running relays.
 *
 * - Nothing pending, nothing written: the applied versions are read first,
 *   with no DDL at all, so a role without the right to create anything (a
 *   relay's, in a deploy pipeline) runs a no-op install, and a dry run says
 *   exactly what the real run will do (the same reads, the same refusals).
 * - Something pending: the installer's rights are checked before anything
 *   starts (a missing right is one clear error, not a half-way failure);
 *   then, under a session advisory lock keyed by the schema name (two
 *   `interlock install` at once run one after the other, and the second
 *   finds nothing to do), each migration runs in a transaction of its own.
 * - Locks: every statement waits at most `lock_timeout` for a lock. A DDL
 *   statement queued behind a long reader (a nightly pg_dump holds ACCESS
 *   SHARE on every table) would otherwise hold every relay's claim up behind
 *   it for the reader's whole duration; with the timeout, it gives up, the
 *   queue moves on, and the migration is tried again after a pause, up to
 *   `lockRetries` times. DDL is transactional, so a migration that gives up
 *   leaves nothing behind.
 * - `-- no-transaction` migrations (CREATE INDEX CONCURRENTLY) run one
 *   statement at a time: building the index takes SHARE UPDATE EXCLUSIVE,
 *   which lets reads and writes go on, so it may wait as long as it needs; an
 *   index a failed build left invalid is dropped and built again.
 */
import type pg from 'pg'
import { StoreError } from '../../errors.js'
import { sha256Hex } from '../../hash.js'
import { assessSchema, fileName, loadMigrations, statementsOf, type Migration, type MigrationInfo, type MigrationLock, type SchemaAssessment } from '../migrations.js'
import { pgError } from './errors.js'
import { quoteSchema, withSchema } from './identifier.js'

export interface PostgresMigrationRun extends SchemaAssessment {
  applied: Migration[]
}

/** How long one attempt at a migration may wait for a lock, and how often it is tried. */
export interface LockPolicy {
  /** lock_timeout of each attempt (ms). Default 3000. */
  lockTimeoutMs?: number
  /** Attempts after the first, when a lock was not had in time. Default 20. */
  lockRetries?: number
  /** Pause before the n-th retry (ms). Default 1 s, doubling, at most 30 s. */
  retryDelayMs?: (retry: number) => number
  sleep?: (ms: number) => Promise<void>
  /** Told of each attempt that gave up on a lock, with who held it. */
  onLockWait?: (wait: LockWait) => void
}

export interface LockWait {
  migration: string
  attempt: number
  /** Sessions holding a lock the migration needs, oldest transaction first. */
  holders: LockHolder[]
  retryInMs: number
}

export interface LockHolder {
  pid: number
  user: string | null
  application: string | null
  relation: string
  mode: string
  /** How long its transaction has been open (s), when known. */
  transactionSeconds: number | null
}

export interface PostgresMigrateOptions extends LockPolicy {
  dryRun?: boolean
  /** The migrations to apply (default: the ones this binary ships). */
  migrations?: readonly Migration[]
}

export const LOCK_TIMEOUT_MS = 3000
export const LOCK_RETRIES = 20
const LOCK_NOT_AVAILABLE = '55P03'

function bootstrap(schema: string): string {
  const q = quoteSchema(schema)
  // CREATE SCHEMA checks the right to create schemas in the database before it looks whether the schema
  // exists, even with IF NOT EXISTS: an installer given a schema of its own needs no such right.
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

export async function migratePostgres(client: pg.ClientBase, schema: string, where: string, options: PostgresMigrateOptions = {}): Promise<PostgresMigrationRun> {
  const known = options.migrations ?? loadMigrations('postgres')
  try {
    const plan = assessSchema('postgres', await readAppliedPostgres(client, schema), where, known)
    if (plan.pending.length === 0) return { ...plan, applied: [] }
    await requireInstallRights(client, schema, where)
    if (options.dryRun) return { ...plan, applied: [] }
    await takeInstallLock(client, schema, options.sleep)
    try {
      await client.query(bootstrap(schema))
      // Another install may have run while this one waited for the lock.
      const now = assessSchema('postgres', await readAppliedPostgres(client, schema), where, known)
      for (const m of now.pending) await applyWithRetries(client, schema, m, options)
      return { ...now, applied: now.pending, pending: [] }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1::bigint)', [installLockKey(schema)]).catch(() => {})
    }
  } catch (e) {
    throw pgError(e, 'installing the schema', where)
  }
}

/**
 * The install lock, tried rather than waited for: a session waiting in
 * pg_advisory_lock() is a transaction with a snapshot, and CREATE INDEX
 * CONCURRENTLY in the install that holds the lock waits for every older
 * snapshot to end, so two installs waiting on each other would deadlock.
 */
async function takeInstallLock(client: pg.ClientBase, schema: string, sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))): Promise<void> {
  for (;;) {
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [installLockKey(schema)])
    if (rows[0]?.ok) return
    await sleep(250)
  }
}

/**
 * What applying needs, asked before anything is applied: the schema's owner
 * (or a member of its role), or, when there is no schema yet, the right to
 * create one. The migrations alter the tables, which only their owner may.
 */
async function requireInstallRights(client: pg.ClientBase, schema: string, where: string): Promise<void> {
  const { rows } = await client.query<{ role: string; exists: boolean; may: boolean; owner: string | null }>(
    `SELECT current_user AS role, n.oid IS NOT NULL AS exists,
            CASE WHEN n.oid IS NULL THEN has_database_privilege(current_database(), 'CREATE')
                 ELSE pg_has_role(n.nspowner, 'USAGE') END AS may,
            pg_get_userbyid(n.nspowner) AS owner
     FROM (SELECT 1) AS one LEFT JOIN pg_namespace n ON n.nspname = $1`,
    [schema],
  )
  const r = rows[0]!
  if (r.may) return
  throw new StoreError(
    r.exists
      ? `${where} has migrations pending, and role "${r.role}" cannot apply them: the schema is owned by "${r.owner}"`
      : `${where} does not exist, and role "${r.role}" may not create schemas in the database`,
    {
      hint: r.exists
        ? `Run \`interlock install\` as the installer role ("${r.owner}", which owns the schema and everything in it).`
        : 'Run `interlock install` as a role that may (CREATE on the database), or have a superuser create the schema for the installer first: `interlock install --print-grants --installer <role>`.',
      context: { role: r.role, owner: r.owner, code: '42501' },
    },
  )
}

async function applyWithRetries(client: pg.ClientBase, schema: string, m: Migration, options: LockPolicy): Promise<void> {
  const retries = options.lockRetries ?? LOCK_RETRIES
  const timeoutMs = options.lockTimeoutMs ?? LOCK_TIMEOUT_MS
  const delay = options.retryDelayMs ?? ((n: number) => Math.min(30_000, 1000 * 2 ** (n - 1)))
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  let holders: LockHolder[] = []
  for (let attempt = 1; ; attempt++) {
    try {
      await (m.transaction ? applyInTransaction(client, schema, m, timeoutMs) : applyStatements(client, schema, m, timeoutMs))
      return
    } catch (e) {
      if ((e as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw e
      holders = await lockHolders(client, schema, m.locks, timeoutMs).catch(() => [])
      if (attempt > retries) break
      const retryInMs = delay(attempt)
      options.onLockWait?.({ migration: fileName(m), attempt, holders, retryInMs })
      await sleep(retryInMs)
    }
  }
  const who = holders.map(describeHolder).join('; ')
  throw new StoreError(
    `migration ${fileName(m)} did not get its locks within ${timeoutMs} ms in ${retries + 1} attempts${who ? `: ${who}` : ''}; nothing of it was applied`,
    {
      hint: 'A long transaction holds the table (a pg_dump, a forgotten psql session). Relays were held up at most one lock_timeout per attempt. Run `interlock install` again once it has finished, or allow longer with --lock-timeout / --lock-retries.',
      context: { migration: fileName(m), lockTimeoutMs: timeoutMs, attempts: retries + 1, holders },
    },
  )
}

async function applyInTransaction(client: pg.ClientBase, schema: string, m: Migration, timeoutMs: number): Promise<void> {
  await client.query('BEGIN')
  try {
    await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(timeoutMs))}`)
    await client.query(withSchema(m.sql, schema))
    await record(client, schema, m)
    await client.query('COMMIT')
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {})
    throw e
  }
}

/** One statement at a time (CREATE INDEX CONCURRENTLY cannot run in a transaction); each is safe to repeat. */
async function applyStatements(client: pg.ClientBase, schema: string, m: Migration, timeoutMs: number): Promise<void> {
  const q = quoteSchema(schema)
  try {
    for (const statement of statementsOf(withSchema(m.sql, schema))) {
      const build = /^CREATE (?:UNIQUE )?INDEX CONCURRENTLY IF NOT EXISTS ([a-z_][a-z0-9_]*) /.exec(statement)
      if (build) {
        // A build that failed (or was cancelled) leaves an invalid index that IF NOT EXISTS would keep.
        const { rows } = await client.query<{ invalid: boolean }>(
          `SELECT NOT i.indisvalid AS invalid FROM pg_index i WHERE i.indexrelid = to_regclass($1)`,
          [`${q}.${build[1]}`],
        )
        if (rows[0]?.invalid) await client.query(`DROP INDEX CONCURRENTLY IF EXISTS ${q}.${build[1]}`)
        // Building takes SHARE UPDATE EXCLUSIVE, which holds up no read or write: it may wait as long as it must
        // (for transactions older than it, a running pg_dump among them).
        await client.query('SET lock_timeout = 0')
      } else {
        await client.query(`SET lock_timeout = ${Math.max(1, Math.floor(timeoutMs))}`)
      }
      await client.query(statement)
    }
    await record(client, schema, m)
  } finally {
    await client.query('RESET lock_timeout').catch(() => {})
  }
}

function record(client: pg.ClientBase, schema: string, m: Migration): Promise<unknown> {
  return client.query(`INSERT INTO ${quoteSchema(schema)}.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)`, [m.version, m.name, m.checksum])
}

// Which lock modes each mode waits for (PostgreSQL's conflict table, "Table-Level Locks").
const CONFLICTS: Record<string, readonly string[]> = {
  'ACCESS SHARE': ['ACCESS EXCLUSIVE'],
  'ROW SHARE': ['EXCLUSIVE', 'ACCESS EXCLUSIVE'],
  'ROW EXCLUSIVE': ['SHARE', 'SHARE ROW EXCLUSIVE', 'EXCLUSIVE', 'ACCESS EXCLUSIVE'],
  'SHARE UPDATE EXCLUSIVE': ['SHARE UPDATE EXCLUSIVE', 'SHARE', 'SHARE ROW EXCLUSIVE', 'EXCLUSIVE', 'ACCESS EXCLUSIVE'],
  SHARE: ['ROW EXCLUSIVE', 'SHARE UPDATE EXCLUSIVE', 'SHARE ROW EXCLUSIVE', 'EXCLUSIVE', 'ACCESS EXCLUSIVE'],
  'SHARE ROW EXCLUSIVE': ['ROW EXCLUSIVE', 'SHARE UPDATE EXCLUSIVE', 'SHARE', 'SHARE ROW EXCLUSIVE', 'EXCLUSIVE', 'ACCESS EXCLUSIVE'],
  EXCLUSIVE: ['ROW SHARE', 'ROW EXCLUSIVE', 'SHARE UPDATE EXCLUSIVE', 'SHARE', 'SHARE ROW EXCLUSIVE', 'EXCLUSIVE', 'ACCESS EXCLUSIVE'],
  'ACCESS EXCLUSIVE': ['ACCESS SHARE', 'ROW SHARE', 'ROW EXCLUSIVE', 'SHARE UPDATE EXCLUSIVE', 'SHARE', 'SHARE ROW EXCLUSIVE', 'EXCLUSIVE', 'ACCESS EXCLUSIVE'],
}

/** pg_locks' spelling of a mode: "ACCESS EXCLUSIVE" is "AccessExclusiveLock". */
export function pgLockMode(mode: string): string {
  return `${mode.toLowerCase().replace(/(^|\s)([a-z])/g, (_, _s: string, c: string) => c.toUpperCase())}Lock`
}

/**
 * Sessions holding, on the migration's tables, a lock its own locks wait for,
 * in a transaction older than the wait that gave up (a relay's claim holds
 * its lock for milliseconds: it is not what the migration waited for).
 */
async function lockHolders(client: pg.ClientBase, schema: string, locks: readonly MigrationLock[], waitedMs: number): Promise<LockHolder[]> {
  const wanted = locks.filter((l) => l.mode !== 'none')
  if (wanted.length === 0) return []
  const { rows } = await client.query<{ pid: number; usename: string | null; application_name: string | null; relname: string; mode: string; seconds: number | null }>(
    `SELECT l.pid, a.usename, a.application_name, c.relname, l.mode, extract(epoch FROM now() - a.xact_start)::int AS seconds
     FROM pg_locks l JOIN pg_class c ON c.oid = l.relation LEFT JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.granted AND l.pid <> pg_backend_pid() AND c.relnamespace = to_regnamespace($1)
       AND (c.relname, l.mode) IN (SELECT * FROM unnest($2::text[], $3::text[]))
       AND a.xact_start <= now() - $4 * interval '1 millisecond'
     ORDER BY a.xact_start NULLS LAST, l.pid LIMIT 5`,
    [
      quoteSchema(schema),
      ...transpose(wanted.flatMap((w) => CONFLICTS[w.mode]!.map((mode) => [w.relation, pgLockMode(mode)] as [string, string]))),
      waitedMs,
    ],
  )
  return rows.map((r) => ({ pid: r.pid, user: r.usename, application: r.application_name || null, relation: r.relname, mode: r.mode, transactionSeconds: r.seconds }))
}

function transpose(pairs: [string, string][]): [string[], string[]] {
  return [pairs.map((p) => p[0]), pairs.map((p) => p[1])]
}

export function describeHolder(h: LockHolder): string {
  const who = [h.application && `"${h.application}"`, h.user && `user ${h.user}`].filter(Boolean).join(', ')
  const age = h.transactionSeconds === null ? '' : `, its transaction open ${h.transactionSeconds} s`
  return `pid ${h.pid}${who ? ` (${who})` : ''} holds ${h.mode} on ${h.relation}${age}`
}

/** The full install as one script, for review or a first install by hand with psql (`interlock install --print-sql`). */
export function postgresInstallSql(schema: string): string {
  const q = quoteSchema(schema)
  const key = installLockKey(schema)
  const parts = [
    '-- Run with: psql -v ON_ERROR_STOP=1 -f <this file>   (CREATE INDEX CONCURRENTLY must run outside a transaction).',
    `SELECT pg_advisory_lock(${key});`,
    '',
    bootstrap(schema),
    '',
  ]
  for (const m of loadMigrations('postgres')) {
    const insert = `INSERT INTO ${q}.schema_migrations (version, name, checksum) VALUES (${m.version}, '${m.name}', '${m.checksum}');`
    parts.push(`-- ${fileName(m)}`)
    if (m.transaction) parts.push('BEGIN;', `SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS};`, withSchema(m.sql, schema).trimEnd(), insert, 'COMMIT;', '')
    else parts.push(...statementsOf(withSchema(m.sql, schema)).map((s) => `${s};`), insert, '')
  }
  parts.push(`SELECT pg_advisory_unlock(${key});`, '')
  return parts.join('\n')
}
