/**
 * `interlock notary verify` as a user runs it, on the log [notary] names
 * (SQLite at path, PostgreSQL at url): a log written through the notary
 * verifies (exit 0, counts per kind); a record forged in the database, and
 * a performed and an abort of one attempt, each fail it with exit 5 naming
 * the effect and the record; no log file is exit 7 (an absent PostgreSQL schema 4), no [notary] exit 3.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JsonObject } from '../../src/core/canonical-json.js'
import { generateKeyPair, type KeyPair } from '../../src/core/crypto/keys.js'
import { sha256Hex } from '../../src/core/hash.js'
import { notaryLog, type NotaryLog } from '../../src/core/notary/log.js'
import { openPostgresNotaryStore } from '../../src/core/notary/postgres/pg-notary-store.js'
import { recordHash, signRecord, type NotaryKind, type StoredRecord } from '../../src/core/notary/records.js'
import { openSqliteNotaryStore } from '../../src/core/notary/sqlite/sqlite-notary-store.js'
import type { NotaryStore } from '../../src/core/notary/store.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'

const agent = generateKeyPair('relay', 'agent-1')
const service = generateKeyPair('service', 'payments')
const trusted = { agents: { 'agent-1': agent.publicKey }, services: { payments: service.publicKey } }
const keysToml = `[notary.agents]\nagent-1 = "${agent.publicKey}"\n[notary.services]\npayments = "${service.publicKey}"\n`

let db: TestDatabase
beforeAll(async () => {
  assertCliBuilt()
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

async function write(log: NotaryLog, key: KeyPair, writer: string, effect: string, attempt: number, kind: NotaryKind, body: JsonObject = {}) {
  const { head } = await log.effect(effect)
  const answer = await log.write(signRecord({ effect, attempt, kind, writer, at: new Date().toISOString(), body, prev: head }, key))
  expect(answer.status).toBe('written')
}

/** One effect performed, one aborted and performed at attempt 2, as the protocol writes them. */
async function fill(store: NotaryStore): Promise<{ performed: string; retried: string }> {
  const log = notaryLog(store, trusted)
  const performed = sha256Hex(`verify-e2e-performed-${Math.random()}`)
  await write(log, agent, 'agent-1', performed, 1, 'intend')
  await write(log, service, 'payments', performed, 1, 'claim')
  await write(log, service, 'payments', performed, 1, 'performed', { status: 200, body: { id: 'op_1' } })
  const retried = sha256Hex(`verify-e2e-retried-${Math.random()}`)
  await write(log, agent, 'agent-1', retried, 1, 'intend')
  await write(log, agent, 'agent-1', retried, 1, 'abort')
  await write(log, agent, 'agent-1', retried, 2, 'intend')
  await write(log, service, 'payments', retried, 2, 'claim')
  await write(log, service, 'payments', retried, 2, 'performed', { status: 200, body: { id: 'op_2' } })
  await log.close()
  return { performed, retried }
}

/** A signed record after the head of `effect`'s chain, as a database attacker would insert it. */
function after(head: StoredRecord, key: KeyPair, writer: string, attempt: number, kind: NotaryKind): StoredRecord {
  const r = signRecord({ effect: head.effect, attempt, kind, writer, at: new Date().toISOString(), body: {}, prev: head.hash }, key)
  return { ...r, seq: head.seq + 1, hash: recordHash(r) }
}

const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>

describe('interlock notary verify', () => {
  it('SQLite: a clean log exits 0 with counts per kind; a forged record and an abort after performed exit 5 naming effect and record', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-notary-verify-'))
    writeFileSync(join(cwd, 'interlock.toml'), `[notary]\npath = "notary.db"\n${keysToml}`)
    const { performed, retried } = await fill(openSqliteNotaryStore(join(cwd, 'notary.db')))

    const clean = await interlock(['notary', 'verify'], { cwd })
    expect(clean.code, clean.stderr).toBe(0)
    expect(clean.stdout).toContain('8 records for 2 effects')
    expect(clean.stdout).toContain('3 intend, 2 claim, 2 performed, 0 failed, 1 abort')
    expect(clean.stdout).toContain('OK: every chain, signature and protocol rule verifies.')
    const cleanJson = await interlock(['notary', 'verify', '--json'], { cwd })
    expect(cleanJson.code).toBe(0)
    expect(json(cleanJson.stdout)).toMatchObject({ ok: true, effects: 2, records: 8, signatures: { valid: 8, invalid: 0 }, problems: [] })

    const file = new Database(join(cwd, 'notary.db'))
    const insert = file.prepare('INSERT INTO notary_records (effect, seq, attempt, kind, writer, at, body, prev, signature, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
    const head = (effect: string) => {
      const row = file.prepare('SELECT * FROM notary_records WHERE effect = ? ORDER BY seq DESC LIMIT 1').get(effect) as StoredRecord & { body: string }
      return { ...row, body: JSON.parse(row.body) as JsonObject }
    }
    const put = (r: StoredRecord) => insert.run(r.effect, r.seq, r.attempt, r.kind, r.writer, r.at, JSON.stringify(r.body), r.prev, r.signature, r.hash)
    put(after(head(performed), agent, 'agent-1', 1, 'abort'))
    put(after(head(retried), generateKeyPair('service', 'payments'), 'payments', 3, 'claim'))
    file.close()

    const bad = await interlock(['notary', 'verify'], { cwd })
    expect(bad.code).toBe(5)
    expect(bad.stderr).toContain(`effect ${performed} record 4 (abort, attempt 1): attempt 1 was already decided by the claim in record 2: performed and aborted both recorded`)
    expect(bad.stderr).toContain(`effect ${retried} record 6 (claim, attempt 3): not signed by payments`)
    const badJson = await interlock(['notary', 'verify', '--json'], { cwd })
    expect(badJson.code).toBe(5)
    const error = json(badJson.stdout).error as { code: string; context: { report: { ok: boolean; problems: { effect: string; seq: number }[] } } }
    expect(error.code).toBe('E_INTEGRITY')
    expect(error.context.report.ok).toBe(false)
    expect(error.context.report.problems.map((p) => [p.effect, p.seq])).toEqual(expect.arrayContaining([[performed, 4], [retried, 6]]))
  })

  it('PostgreSQL: the log at [notary] url verifies; a record deleted from it exits 5 naming effect and record', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-notary-verify-pg-'))
    writeFileSync(join(cwd, 'interlock.toml'), `[notary]\nurl = "\${NOTARY_DATABASE_URL}"\nschema = "verify_e2e"\n${keysToml}`)
    const env = { NOTARY_DATABASE_URL: db.url }
    const { retried } = await fill(await openPostgresNotaryStore({ url: db.url, schema: 'verify_e2e' }))

    const clean = await interlock(['notary', 'verify', '--json'], { cwd, env })
    expect(clean.code, clean.stderr).toBe(0)
    expect(json(clean.stdout)).toMatchObject({ ok: true, effects: 2, records: 8, kinds: { intend: 3, claim: 2, performed: 2, failed: 0, abort: 1 } })

    const c = new pg.Client({ connectionString: db.url })
    await c.connect()
    await c.query('DELETE FROM verify_e2e.notary_records WHERE effect = $1 AND seq = 4', [retried])
    await c.end()
    const bad = await interlock(['notary', 'verify'], { cwd, env })
    expect(bad.code).toBe(5)
    expect(bad.stderr).toContain(`effect ${retried} record 5 (performed, attempt 2): record 4 is missing (deleted)`)
    expect(bad.stderr).toContain('decision row (claim by payments, record 4) without its record')

    // A schema the notary never installed: unreachable log (exit 4), and verify creates nothing there.
    writeFileSync(join(cwd, 'interlock.toml'), `[notary]\nurl = "\${NOTARY_DATABASE_URL}"\nschema = "verify_e2e_absent"\n${keysToml}`)
    const absent = await interlock(['notary', 'verify'], { cwd, env })
    expect(absent.code, absent.stderr).toBe(4)
    const check = new pg.Client({ connectionString: db.url })
    await check.connect()
    const { rowCount } = await check.query("SELECT 1 FROM information_schema.schemata WHERE schema_name = 'verify_e2e_absent'")
    await check.end()
    expect(rowCount).toBe(0)
  })

  it('no log file at [notary] path exits 7 without creating one; no [notary] section exits 3', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-notary-verify-none-'))
    writeFileSync(join(cwd, 'interlock.toml'), `[notary]\npath = "absent.db"\n${keysToml}`)
    const missing = await interlock(['notary', 'verify'], { cwd })
    expect(missing.code).toBe(7)
    expect(missing.stderr).toMatch(/the notary's log .*absent\.db does not exist/)
    expect(existsSync(join(cwd, 'absent.db'))).toBe(false)
    writeFileSync(join(cwd, 'interlock.toml'), '[store]\npath = "journal.db"\n')
    const none = await interlock(['notary', 'verify'], { cwd })
    expect(none.code).toBe(3)
    expect(none.stderr).toContain('has no [notary] section')
  })
})
