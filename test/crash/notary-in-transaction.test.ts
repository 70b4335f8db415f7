/**
 * The in-transaction form (docs/notary.md, "What the service must do", 1)
 * against the embedded PostgreSQL, with real processes: a service
 * (notary-pg-service.ts) whose change and whose claim/performed lines share
 * one transaction in its own database, the notary serving from the same
 * tables ([notary] url), and an agent process (notary-child.ts) sending one
 * notarized tier-3 effect to it.
 *
 * Both processes are SIGKILLed while the request is in flight: the agent
 * first (the effect stays DISPATCHED in its journal), then the service,
 * either between its change and its COMMIT or just after it. Then this
 * process recovers the journal through the notary.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoreConfig, TargetConfig } from '../../src/core/config/types.js'
import { toBase64Url } from '../../src/core/crypto/encoding.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { toEffect } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { notaryClient } from '../../src/core/notary/client.js'
import { installNotaryTables } from '../../src/core/notary/in-transaction.js'
import { notaryLog, type NotaryLog } from '../../src/core/notary/log.js'
import { notarized } from '../../src/core/notary/notarized.js'
import { openPostgresNotaryStore } from '../../src/core/notary/postgres/pg-notary-store.js'
import { serveNotary, type RunningNotary } from '../../src/core/notary/serve.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTarget } from '../../src/core/targets/registry.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'
import type { NotaryChildPlan } from './notary-child.js'
import type { PgServicePlan } from './notary-pg-service.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const agent = generateKeyPair('relay', 'agent-1')
const service = generateKeyPair('service', 'payments')
const trusted = { agents: { 'agent-1': agent.publicKey }, services: { payments: service.publicKey } }
const SCHEMA = 'interlock_notary'

let db: TestDatabase
let sql: pg.Client
let dir = ''
let notary: RunningNotary
let log: NotaryLog
const children: ChildProcess[] = []

beforeAll(async () => {
  db = await createTestDatabase()
  dir = mkdtempSync(join(tmpdir(), 'interlock-notary-pg-'))
  sql = new pg.Client({ connectionString: db.url })
  await sql.connect()
  // The service's own schema, and the notary's beside it in the same database.
  await sql.query('CREATE SCHEMA app; CREATE TABLE app.charges (id serial PRIMARY KEY, effect text NOT NULL, attempt integer NOT NULL, amount text NOT NULL)')
  await installNotaryTables(sql, SCHEMA)
  notary = await serveNotary({ host: '127.0.0.1', port: 0, path: join(dir, 'unused.db'), ...trusted, postgres: { url: db.url, schema: SCHEMA } })
  log = notaryLog(await openPostgresNotaryStore({ url: db.url, schema: SCHEMA, install: false }), trusted)
})
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  await log?.close()
  await notary?.close()
  await sql?.end()
  await db?.drop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

function start(file: string, args: string[], env: Record<string, string>): { child: ChildProcess; line: (pattern: RegExp) => Promise<RegExpExecArray>; exited: Promise<NodeJS.Signals | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let stdout = ''
  let stderr = ''
  const waiters: Array<() => void> = []
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    stdout += d
    for (const w of waiters) w()
  })
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)))
  const line = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${file}: no ${pattern} within 30 s\nstdout: ${stdout}\nstderr: ${stderr}`)), 30_000)
      const check = () => {
        const m = pattern.exec(stdout)
        if (m) {
          clearTimeout(timer)
          resolve(m)
        }
      }
      waiters.push(check)
      check()
      void exited.then(() => setTimeout(() => reject(new Error(`${file} exited before ${pattern}\nstdout: ${stdout}\nstderr: ${stderr}`)), 50))
    })
  return { child, line, exited }
}

async function startService(stop?: PgServicePlan['stop']) {
  const plan: PgServicePlan = { url: db.url, schema: SCHEMA, service: 'payments', seed: toBase64Url(service.seed), publicKey: service.publicKey, ...(stop ? { stop } : {}) }
  const svc = start('test/crash/notary-pg-service.ts', [], { NOTARY_PG_SERVICE_PLAN: JSON.stringify(plan) })
  const url = (await svc.line(/^url (\S+)$/m))[1]!
  return { ...svc, url }
}

const tier3 = (url: string): TargetConfig => ({ type: 'http', tier: 3, method: 'POST', headers: {}, timeoutMs: 20_000, connectTimeoutMs: 2000, url: `${url}/charge` })
const journal = (name: string): StoreConfig => ({ kind: 'sqlite', path: join(dir, `${name}.db`) })
const charges = async (effect: string) => (await sql.query<{ attempt: number }>('SELECT attempt FROM app.charges WHERE effect = $1 ORDER BY id', [effect])).rows.map((r) => r.attempt)
const lines = async (effect: string) => (await sql.query<{ attempt: number; kind: string }>(`SELECT attempt, kind FROM ${SCHEMA}.notary_records WHERE effect = $1 ORDER BY seq`, [effect])).rows.map((r) => `${r.attempt}:${r.kind}`)

/** The agent sends `thread`'s effect to a service that stops at `stop`; both are SIGKILLed there. */
async function killBoth(thread: string, stop: 'before-commit' | 'after-commit') {
  const input = { thread, target: 'payments', action: 'charge', args: { amount: '7.00' } }
  const id = toEffect(input).id
  const svc = await startService(stop)
  const plan: NotaryChildPlan = {
    store: journal(thread),
    name: 'payments',
    target: tier3(svc.url),
    effects: [input],
    notary: { url: notary.url, agent: 'agent-1', seed: toBase64Url(agent.seed), services: trusted.services },
  }
  const planFile = join(dir, `${thread}.json`)
  writeFileSync(planFile, JSON.stringify(plan))
  const agentChild = start('test/crash/notary-child.ts', [planFile], {})
  await svc.line(new RegExp(`^stopped ${stop}$`, 'm'))
  agentChild.child.kill('SIGKILL')
  expect(await agentChild.exited).toBe('SIGKILL')
  svc.child.kill('SIGKILL')
  expect(await svc.exited).toBe('SIGKILL')
  return { input, id }
}

async function recover(name: string, serviceUrl: string, id: string) {
  const store = await openStore(journal(name))
  const target = notarized(createTarget('payments', tier3(serviceUrl)), { notary: notaryClient({ url: notary.url, writer: 'agent-1', key: agent }), services: trusted.services })
  const gate = new Gate({ store, targets: [target], retry: { maxAttempts: 3, backoffMs: 10 } })
  try {
    expect((await store.get(id))?.state).toBe('DISPATCHED')
    await gate.recover()
    return (await store.get(id))?.state
  } finally {
    await gate.close()
    await store.close()
  }
}

describe('the in-transaction form: the service killed with its change and its line in one open transaction', () => {
  it('killed between its change and its COMMIT: neither the charge nor the claim/performed line exists; recovery aborts attempt 1, sends attempt 2, applied once', async () => {
    const { id } = await killBoth('in-tx-before-commit', 'before-commit')
    expect(await charges(id)).toEqual([])
    expect(await lines(id)).toEqual(['1:intend'])
    const svc = await startService()
    try {
      expect(await recover('in-tx-before-commit', svc.url, id)).toBe('COMMITTED')
      expect(await charges(id)).toEqual([2])
      expect(await lines(id)).toEqual(['1:intend', '1:abort', '2:intend', '2:claim', '2:performed'])
      expect(await log.verify(id)).toEqual([])
      // Attempt 1's request, arriving late at the restarted service, is refused and changes nothing.
      const late = await fetch(`${svc.url}/charge`, { method: 'POST', headers: { 'interlock-effect': id, 'interlock-attempt': '1' }, body: JSON.stringify({ args: { amount: '7.00' } }) })
      expect(late.status).toBe(409)
      expect(await late.json()).toMatchObject({ error: 'aborted' })
      // Attempt 2 sent again is answered with its recorded result, not performed twice.
      const again = await fetch(`${svc.url}/charge`, { method: 'POST', headers: { 'interlock-effect': id, 'interlock-attempt': '2' }, body: JSON.stringify({ args: { amount: '7.00' } }) })
      expect(again.status).toBe(200)
      expect(await charges(id)).toEqual([2])
    } finally {
      svc.child.kill('SIGKILL')
    }
  })

  it('killed just after its COMMIT (no answer sent): both the charge and the performed line exist; recovery says COMMITTED without sending again', async () => {
    const { id } = await killBoth('in-tx-after-commit', 'after-commit')
    expect(await charges(id)).toEqual([1])
    expect(await lines(id)).toEqual(['1:intend', '1:claim', '1:performed'])
    // No service runs now: COMMITTED can only come from the notary's line.
    expect(await recover('in-tx-after-commit', 'http://127.0.0.1:9', id)).toBe('COMMITTED')
    expect(await charges(id)).toEqual([1])
    expect(await log.verify(id)).toEqual([])
  })

  it('an abort racing an open claim waits for the service\'s transaction: after COMMIT the abort is told PERFORMED, after ROLLBACK it wins', async () => {
    const { claimInTransaction } = await import('../../src/core/notary/in-transaction.js')
    const agentClient = notaryClient({ url: notary.url, writer: 'agent-1', key: agent, timeoutMs: 20_000 })
    for (const end of ['COMMIT', 'ROLLBACK'] as const) {
      const id = toEffect({ thread: `in-tx-race-${end}`, target: 'payments', action: 'charge', args: {} }).id
      const c = new pg.Client({ connectionString: db.url })
      await c.connect()
      await c.query('BEGIN')
      const claim = await claimInTransaction(c, { service: 'payments', key: service, schema: SCHEMA }, id, 1)
      expect(claim.go).toBe(true)
      const abort = agentClient.write(id, 1, 'abort')
      await new Promise((r) => setTimeout(r, 300))
      if (claim.go) await claim.performed({ body: { ok: true } })
      await c.query(end)
      await c.end()
      const answer = await abort
      if (end === 'COMMIT') expect(answer).toMatchObject({ status: 'decided', view: { state: 'PERFORMED' } })
      else expect(answer).toMatchObject({ status: 'written', view: { state: 'ABORTED' } })
    }
  })
})
