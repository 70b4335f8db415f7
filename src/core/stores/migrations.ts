/**
 * The numbered SQL migrations shipped in the package's `schemas/<kind>/`
 * folder (`0001_baseline.sql`, `0002_...`, applied in number order), and the one judgement both the
 * installer and openStore make about a database: which migrations it has,
 * which it lacks, and whether it is one this binary may touch at all.
 *
 * A migration's checksum is the SHA-256 of its text with line endings
 * normalised, taken before the schema name is substituted, so one file has
 * one checksum whatever schema it was installed into.
 *
 * Each file says, in its leading comment, what it locks and how it runs
 * (`interlock install --dry-run` lists both for what is pending):
 *   -- lock: <table> <MODE>: <what that means for relays, operators>   (one line per lock; "-- lock: none: <why>")
 *   -- no-transaction                                                   (CREATE / DROP INDEX CONCURRENTLY, one statement at a time)
 * test/integration/migration-locks.test.ts holds the declarations to what
 * PostgreSQL takes.
 *
 * 0001 is the baseline: the schema as first released. Databases installed by
 * the development builds before it (numbered 0001_init … 0012) are refused by
 * name: nothing in them is at a version this release can upgrade.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { SchemaVersionError, StoreError } from '../errors.js'
import { sha256Hex } from '../hash.js'

export type StoreKind = 'sqlite' | 'postgres'

export interface MigrationInfo {
  version: number
  name: string
  checksum: string
}

export interface Migration extends MigrationInfo {
  /** The file's text (placeholders not yet substituted). */
  sql: string
  /** What applying it locks, as its `-- lock:` lines say. */
  locks: MigrationLock[]
  /** False for `-- no-transaction` files: each statement runs on its own (CREATE INDEX CONCURRENTLY cannot run in a transaction). */
  transaction: boolean
}

/** One `-- lock:` line: a table and the lock mode taken on it ("none": nothing that exists), and what it means. */
export interface MigrationLock {
  relation: string
  mode: string
  note: string
}

/** What `install --dry-run` lists of a pending migration. */
export interface PendingMigration extends MigrationInfo {
  locks: MigrationLock[]
  transaction: boolean
}

export interface SchemaAssessment {
  currentVersion: number
  targetVersion: number
  pending: Migration[]
}

const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/
const LOCK_LINE = /^-- lock: (?:(none)|([a-z_][a-z0-9_]*) ((?:ACCESS|ROW|SHARE|UPDATE|EXCLUSIVE)(?: (?:ACCESS|ROW|SHARE|UPDATE|EXCLUSIVE))*)): (.+)$/
const MODES = ['ACCESS SHARE', 'ROW SHARE', 'ROW EXCLUSIVE', 'SHARE UPDATE EXCLUSIVE', 'SHARE', 'SHARE ROW EXCLUSIVE', 'EXCLUSIVE', 'ACCESS EXCLUSIVE']
/** The only statements a `-- no-transaction` file may hold: each is safe to run again after a failure part way. */
const NO_TRANSACTION_STATEMENT = /^(CREATE (UNIQUE )?INDEX CONCURRENTLY IF NOT EXISTS|DROP INDEX CONCURRENTLY IF EXISTS) /

/**
 * The development builds' migrations, by the names they were recorded under:
 * a database holding one of them was installed before the baseline.
 */
const PRE_RELEASE: Record<StoreKind, readonly string[]> = {
  postgres: ['init', 'relay', 'append_function', 'append_lean', 'claim_index', 'append_set', 'append_step', 'append_plans', 'state_index', 'agent_access'],
  sqlite: ['init', 'relay', 'lean_appends'],
}

// src/core/stores/ and dist/core/stores/ are both three levels below the package root.
const SCHEMAS = new URL('../../../schemas/', import.meta.url)

const cache = new Map<StoreKind, Migration[]>()

export function loadMigrations(kind: StoreKind): Migration[] {
  let migrations = cache.get(kind)
  if (!migrations) {
    const dir = fileURLToPath(new URL(`${kind}/`, SCHEMAS))
    let files: string[]
    try {
      files = readdirSync(dir)
    } catch (cause) {
      throw new StoreError(`the ${kind} migrations folder ${dir} cannot be read; the installation is incomplete`, {
        hint: 'Reinstall interlock: its package must include the schemas/ folder.',
        cause,
      })
    }
    migrations = files
      .map((f) => ({ f, m: FILE.exec(f) }))
      .filter((x): x is { f: string; m: RegExpExecArray } => x.m !== null)
      .map(({ f, m }) => parseMigration(f, Number(m[1]), m[2]!, readFileSync(`${dir}/${f}`, 'utf8')))
      .sort((a, b) => a.version - b.version)
    // Numbers only need to be unique and increasing: features developed side by side
    // reserve their numbers, and one may ship before another (a gap is not an error).
    migrations.forEach((m, i) => {
      const before = i === 0 ? 0 : migrations![i - 1]!.version
      if (m.version <= before) throw new StoreError(`the ${kind} migrations have two files numbered ${m.version}`)
    })
    cache.set(kind, migrations)
  }
  return migrations
}

/** A migration file's text, its directives read and checked (a malformed one is the package's bug: StoreError). */
export function parseMigration(file: string, version: number, name: string, text: string): Migration {
  const sql = text.replace(/\r\n/g, '\n')
  const header = sql.split('\n').filter((l) => l.startsWith('--'))
  const locks: MigrationLock[] = []
  for (const line of header.filter((l) => l.startsWith('-- lock:'))) {
    const m = LOCK_LINE.exec(line)
    const mode = m?.[3]?.trim()
    if (!m || (mode !== undefined && !MODES.includes(mode))) throw new StoreError(`migration ${file} has a malformed lock line: ${line}`)
    locks.push(m[1] ? { relation: '', mode: 'none', note: m[4]! } : { relation: m[2]!, mode: mode!, note: m[4]! })
  }
  if (locks.length === 0) throw new StoreError(`migration ${file} does not say what it locks (a "-- lock:" line)`)
  const transaction = !header.includes('-- no-transaction')
  if (!transaction) {
    for (const statement of statementsOf(sql)) {
      if (!NO_TRANSACTION_STATEMENT.test(statement)) throw new StoreError(`migration ${file} runs outside a transaction, so each statement must be safe to repeat; this one is not: ${statement.slice(0, 80)}`)
    }
  }
  return { version, name, checksum: sha256Hex(sql), sql, locks, transaction }
}

/** The statements of a `-- no-transaction` file: comments dropped, one per `;` at a line's end. */
export function statementsOf(sql: string): string[] {
  return sql
    .split('\n')
    .filter((l) => !l.trimStart().startsWith('--'))
    .join('\n')
    .split(/;\s*$/m)
    .map((s) => s.trim().replace(/\s+/g, ' '))
    .filter(Boolean)
}

/** The schema version this binary writes and reads. */
export function latestVersion(kind: StoreKind): number {
  return loadMigrations(kind).at(-1)?.version ?? 0
}

/**
 * Compares what a database has applied with what this binary ships. Refuses
 * (SchemaVersionError) a database ahead of the binary, or one whose applied
 * migration differs from the file of the same number: both mean this binary
 * would be writing to tables it does not know.
 */
export function assessSchema(kind: StoreKind, applied: readonly MigrationInfo[], where: string, known: readonly Migration[] = loadMigrations(kind)): SchemaAssessment {
  const targetVersion = known.at(-1)?.version ?? 0
  const byVersion = new Map(known.map((m) => [m.version, m]))
  const before = applied.find((a) => PRE_RELEASE[kind].includes(a.name) && byVersion.get(a.version)?.name !== a.name)
  if (before) {
    throw new SchemaVersionError(
      `${where} was installed by a development build of interlock (its migration ${fileName(before)}), before the first release's baseline; this interlock cannot upgrade it`,
      {
        hint:
          kind === 'postgres'
            ? 'Install this release into a new schema ([store] schema), then move the relays and agents over once the old outbox has drained. Keep the old journal: `interlock outbox export` with the build that wrote it, and `interlock outbox verify --file` checks the export with this one.'
            : 'Start a new journal file ([store] path) with this release once the old one has drained. Keep the old journal: `interlock outbox export` with the build that wrote it, and `interlock outbox verify --file` checks the export with this one.',
        context: { migration: fileName(before), kind },
      },
    )
  }
  let currentVersion = 0
  for (const a of applied) {
    const m = byVersion.get(a.version)
    if (!m) {
      throw new SchemaVersionError(
        `${where} has schema version ${a.version} (${a.name}), newer than this interlock knows (${targetVersion})`,
        {
          hint: 'Upgrade interlock to the version that installed this schema; never downgrade a journal in place.',
          context: { databaseVersion: a.version, binaryVersion: targetVersion },
        },
      )
    }
    if (m.checksum !== a.checksum) {
      throw new SchemaVersionError(
        `${where}: migration ${fileName(m)} was applied with a different text than this interlock ships (checksum ${a.checksum.slice(0, 12)}… vs ${m.checksum.slice(0, 12)}…)`,
        {
          hint: 'An applied migration must never change. Use the interlock release that installed it, or restore the database from a backup.',
          context: { version: m.version, applied: a.checksum, shipped: m.checksum },
        },
      )
    }
    currentVersion = Math.max(currentVersion, a.version)
  }
  const done = new Set(applied.map((a) => a.version))
  return { currentVersion, targetVersion, pending: known.filter((m) => !done.has(m.version)) }
}

/** openStore's check: refuses a database that is not exactly at this binary's version. */
export function requireCurrentSchema(kind: StoreKind, applied: readonly MigrationInfo[], where: string, known?: readonly Migration[]): void {
  const { currentVersion, targetVersion, pending } = assessSchema(kind, applied, where, known)
  if (pending.length > 0) {
    throw new SchemaVersionError(
      currentVersion === 0 && applied.length === 0
        ? `${where} has no Interlock schema installed`
        : `${where} is at schema version ${currentVersion}; this interlock needs ${targetVersion}`,
      {
        hint: 'Run `interlock install` (or `interlock install --print-sql` to review the SQL first).',
        context: { databaseVersion: currentVersion, binaryVersion: targetVersion, pending: pending.map(fileName) },
      },
    )
  }
}

export function fileName(m: MigrationInfo): string {
  return `${String(m.version).padStart(4, '0')}_${m.name}.sql`
}

export function info(m: MigrationInfo): MigrationInfo {
  return { version: m.version, name: m.name, checksum: m.checksum }
}

export function pendingInfo(m: Migration): PendingMigration {
  return { ...info(m), locks: m.locks, transaction: m.transaction }
}
