/** The judgement the installer and openStore share: what a database has, lacks, and whether it may be touched. */
import { describe, expect, it } from 'vitest'
import { SchemaVersionError, StoreError } from '../../../src/core/errors.js'
import { assessSchema, latestVersion, loadMigrations, parseMigration, requireCurrentSchema, statementsOf } from '../../../src/core/stores/migrations.js'

describe.each(['sqlite', 'postgres'] as const)('%s migrations', (kind) => {
  const shipped = loadMigrations(kind)
  const applied = (n: number) => shipped.slice(0, n).map(({ version, name, checksum }) => ({ version, name, checksum }))

  it('are shipped in increasing order, starting with the baseline, each with a checksum and what it locks', () => {
    expect(shipped[0]).toMatchObject({ version: 1, name: 'baseline', transaction: true, locks: [{ mode: 'none' }] })
    for (const m of shipped) expect(m.locks.length).toBeGreaterThan(0)
    expect(shipped.map((m) => m.version)).toEqual([...shipped.map((m) => m.version)].sort((a, b) => a - b))
    for (const m of shipped) expect(m.checksum).toMatch(/^[0-9a-f]{64}$/)
    expect(latestVersion(kind)).toBe(shipped.at(-1)!.version)
  })

  it('an empty database has everything pending', () => {
    expect(assessSchema(kind, [], 'db')).toMatchObject({ currentVersion: 0, targetVersion: latestVersion(kind), pending: shipped })
    expect(() => requireCurrentSchema(kind, [], 'db')).toThrow('db has no Interlock schema installed')
  })

  it('a database behind has the rest pending, and openStore refuses it with the versions', () => {
    const plan = assessSchema(kind, applied(1), 'db')
    expect(plan.currentVersion).toBe(1)
    expect(plan.pending).toEqual(shipped.slice(1))
    if (shipped.length > 1) expect(() => requireCurrentSchema(kind, applied(1), 'db')).toThrow(`db is at schema version 1; this interlock needs ${latestVersion(kind)}`)
  })

  it('a database at this version passes', () => {
    expect(assessSchema(kind, applied(shipped.length), 'db').pending).toEqual([])
    expect(() => requireCurrentSchema(kind, applied(shipped.length), 'db')).not.toThrow()
  })

  it('refuses a version this binary does not know, and a changed migration', () => {
    expect(() => assessSchema(kind, [...applied(1), { version: 9999, name: 'future', checksum: 'x' }], 'db')).toThrow(SchemaVersionError)
    expect(() => assessSchema(kind, [{ ...applied(1)[0]!, checksum: 'x' }], 'db')).toThrow(/0001_baseline\.sql was applied with a different text/)
  })
})

describe.each(['sqlite', 'postgres'] as const)('a %s database installed before the baseline', (kind) => {
  // What the development builds recorded: version 1 "init", and later numbers of their own.
  const old = [
    { version: 1, name: 'init', checksum: 'a'.repeat(64) },
    { version: 3, name: 'relay', checksum: 'b'.repeat(64) },
  ]

  it('is refused by name, with what to do, by the installer and by openStore', () => {
    for (const attempt of [() => assessSchema(kind, old, 'db'), () => requireCurrentSchema(kind, old, 'db')]) {
      const err = (() => {
        try {
          attempt()
        } catch (e) {
          return e
        }
      })()
      expect(err).toBeInstanceOf(SchemaVersionError)
      expect((err as Error).message).toBe(
        "db was installed by a development build of interlock (its migration 0001_init.sql), before the first release's baseline; this interlock cannot upgrade it",
      )
      expect((err as SchemaVersionError).hint).toMatch(kind === 'postgres' ? /new schema \(\[store\] schema\)/ : /new journal file \(\[store\] path\)/)
      expect((err as SchemaVersionError).hint).toMatch(/outbox export/)
    }
  })
})

describe('migration files say what they lock and how they run', () => {
  const parse = (text: string) => parseMigration('0009_x.sql', 9, 'x', text)

  it('reads each lock line: the table, the mode, and what it means', () => {
    const m = parse('-- lock: effects ACCESS EXCLUSIVE: claims wait: at most lock_timeout\n-- lock: journals SHARE UPDATE EXCLUSIVE: writes go on\nALTER TABLE x ADD y int;\n')
    expect(m.locks).toEqual([
      { relation: 'effects', mode: 'ACCESS EXCLUSIVE', note: 'claims wait: at most lock_timeout' },
      { relation: 'journals', mode: 'SHARE UPDATE EXCLUSIVE', note: 'writes go on' },
    ])
    expect(m.transaction).toBe(true)
    expect(parse('-- lock: none: new tables only\nCREATE TABLE t (a int);').locks).toEqual([{ relation: '', mode: 'none', note: 'new tables only' }])
  })

  it('refuses a file that does not say, or says it in a form that is not a lock mode', () => {
    expect(() => parse('CREATE TABLE t (a int);')).toThrow(StoreError)
    expect(() => parse('CREATE TABLE t (a int);')).toThrow(/does not say what it locks/)
    expect(() => parse('-- lock: effects EXCLUSIVE ACCESS: x\nSELECT 1;')).toThrow(/malformed lock line/)
    expect(() => parse('-- lock: effects a lot\nSELECT 1;')).toThrow(/malformed lock line/)
  })

  it('a no-transaction file holds only statements safe to run again, and splits into them', () => {
    const text = [
      '-- no-transaction',
      '-- lock: effects SHARE UPDATE EXCLUSIVE: reads and writes go on',
      'CREATE INDEX CONCURRENTLY IF NOT EXISTS a_idx ON :"schema".effects',
      '  (created_at, id);',
      '-- a comment; with a semicolon',
      'DROP INDEX CONCURRENTLY IF EXISTS :"schema".b_idx;',
      '',
    ].join('\n')
    const m = parse(text)
    expect(m.transaction).toBe(false)
    expect(statementsOf(m.sql)).toEqual([
      'CREATE INDEX CONCURRENTLY IF NOT EXISTS a_idx ON :"schema".effects (created_at, id)',
      'DROP INDEX CONCURRENTLY IF EXISTS :"schema".b_idx',
    ])
    expect(() => parse('-- no-transaction\n-- lock: effects ACCESS EXCLUSIVE: x\nALTER TABLE t ADD c int;')).toThrow(/safe to repeat/)
    expect(() => parse('-- no-transaction\n-- lock: effects SHARE: x\nCREATE INDEX CONCURRENTLY a ON t (c);')).toThrow(/safe to repeat/)
  })

  it('the shipped PostgreSQL files that build indexes on existing tables do so concurrently, outside a transaction', () => {
    for (const m of loadMigrations('postgres').slice(1)) {
      if (/CREATE (UNIQUE )?INDEX/.test(m.sql)) {
        expect(m.transaction, m.name).toBe(false)
        expect(m.sql, m.name).not.toMatch(/CREATE (UNIQUE )?INDEX (?!CONCURRENTLY)/)
      }
    }
  })
})
