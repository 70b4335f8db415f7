/**
 * The numbered SQL migrations shipped in the package's `schemas/<kind>/`
 * folder (`0001_init.sql`, `0002_...`, applied in number order), and the one judgement both the
 * installer and openStore make about a database: which migrations it has,
 * which it lacks, and whether it is one this binary may touch at all.
 *
 * A migration's checksum is the SHA-256 of its text with line endings
 * normalised, taken before the schema name is substituted, so one file has
 * one checksum whatever schema it was installed into.
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
}

export interface SchemaAssessment {
  currentVersion: number
  targetVersion: number
  pending: Migration[]
}

const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/

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
      .map(({ f, m }) => {
        const sql = readFileSync(`${dir}/${f}`, 'utf8').replace(/\r\n/g, '\n')
        return { version: Number(m[1]), name: m[2]!, checksum: sha256Hex(sql), sql }
      })
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
export function assessSchema(kind: StoreKind, applied: readonly MigrationInfo[], where: string): SchemaAssessment {
  const known = loadMigrations(kind)
  const targetVersion = known.at(-1)?.version ?? 0
  const byVersion = new Map(known.map((m) => [m.version, m]))
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
export function requireCurrentSchema(kind: StoreKind, applied: readonly MigrationInfo[], where: string): void {
  const { currentVersion, targetVersion, pending } = assessSchema(kind, applied, where)
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
