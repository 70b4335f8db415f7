/** The judgement the installer and openStore share: what a database has, lacks, and whether it may be touched. */
import { describe, expect, it } from 'vitest'
import { SchemaVersionError } from '../../../src/core/errors.js'
import { assessSchema, latestVersion, loadMigrations, requireCurrentSchema } from '../../../src/core/stores/migrations.js'

describe.each(['sqlite', 'postgres'] as const)('%s migrations', (kind) => {
  const shipped = loadMigrations(kind)
  const applied = (n: number) => shipped.slice(0, n).map(({ version, name, checksum }) => ({ version, name, checksum }))

  it('are shipped in increasing order, starting with init, each with a checksum', () => {
    expect(shipped[0]).toMatchObject({ version: 1, name: 'init' })
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
    expect(() => assessSchema(kind, [{ ...applied(1)[0]!, checksum: 'x' }], 'db')).toThrow(/0001_init\.sql was applied with a different text/)
  })
})
