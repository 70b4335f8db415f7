/**
 * /healthz says whether the relay makes progress, not only whether it runs,
 * and a failing store operation is logged once, reminded, and logged again
 * when it recovers: on the embedded PostgreSQL, with a real lock held on the
 * effects table by another session (as an upgrade's ACCESS EXCLUSIVE or a
 * forgotten transaction would), while the relay's heartbeats, which write
 * another table, go on.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PostgresStoreConfig } from '../../../src/core/config/types.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { Relay, type RelayOptions } from '../../../src/core/relay/relay.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { Store } from '../../../src/core/stores/store.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

const key = generateKeyPair('relay', 'relay-health-test')
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

let n = 0
async function open(limits: Partial<PostgresStoreConfig>): Promise<{ store: Store; schema: string }> {
  const schema = `health_${++n}`
  const store = await openStore({ kind: 'postgres', url: db.url, schema, ...limits }, { autoInstall: true })
  return { store, schema }
}

function relay(store: Store, lines: string[], over: Partial<RelayOptions> = {}): Relay {
  return new Relay({
    store,
    targets: [new CountingTarget('t1', 1)],
    relayId: 'health-relay',
    key,
    policy: new RulesPolicy([]),
    pollMs: 50,
    leaseMs: 900,
    healthPort: 0,
    log: (l) => lines.push(l),
    ...over,
  })
}

/** Another session holding ACCESS EXCLUSIVE on the effects table until release(). */
async function lockEffects(schema: string): Promise<{ release(): Promise<void> }> {
  const c = new pg.Client({ connectionString: db.url })
  await c.connect()
  await c.query('BEGIN')
  await c.query(`LOCK TABLE "${schema}".effects IN ACCESS EXCLUSIVE MODE`)
  return {
    release: async () => {
      await c.query('COMMIT')
      await c.end()
    },
  }
}

async function health(r: Relay): Promise<{ code: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${r.healthPort}/healthz`)
  return { code: res.status, body: (await res.json()) as Record<string, unknown> }
}

async function until(cond: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

describe('relay health and store failures', () => {
  it('a relay blocked on a lock answers 503 "store call pending" while it keeps heartbeating, and 200 once the lock goes', async () => {
    // No limits from the store: the claim waits for as long as the lock is held.
    const { store, schema } = await open({ lockTimeoutMs: 0, statementTimeoutMs: 0 })
    const lines: string[] = []
    const r = relay(store, lines, { stallMs: 400 })
    await r.start()
    try {
      await until(async () => (await health(r)).code === 200, 5_000, 'a healthy idle relay')
      const lock = await lockEffects(schema)
      try {
        // 503 may first say "stalled" (no progress while a claim that just started waits); the lock's own verdict follows once that claim has waited stallMs.
        await until(async () => { const h = await health(r); return h.code === 503 && (h.body as { status?: string }).status === 'store call pending' }, 10_000, '/healthz to say 503 "store call pending"')
        const h = await health(r)
        expect(h.code).toBe(503)
        expect(h.body).toMatchObject({ status: 'store call pending', pendingStoreCall: { call: 'claim' } })
        // Alive all along: the heartbeat writes the relays table, which the lock does not touch.
        const seen = async () => Date.parse((await store.relays()).find((x) => x.relay === 'health-relay')!.lastSeen)
        const before = await seen()
        await until(async () => (await seen()) > before, 5_000, 'a heartbeat while blocked')
      } finally {
        await lock.release()
      }
      await until(async () => (await health(r)).code === 200, 5_000, '/healthz back to 200')
    } finally {
      await r.stop()
      await store.close()
    }
  })

  it('lock_timeout turns the wait into failed claims: logged once, reminded while it lasts, "recovered after N s, M failed attempts"; 503 meanwhile though heartbeats succeed', async () => {
    const { store, schema } = await open({ lockTimeoutMs: 100, statementTimeoutMs: 0 })
    const outbox = new Outbox({ store, targets: [new CountingTarget('t1', 1)] })
    const lines: string[] = []
    const r = relay(store, lines, { stallMs: 500, reminderMs: 300 })
    await r.start()
    try {
      const lock = await lockEffects(schema)
      try {
        await until(() => lines.some((l) => /still failing after/.test(l)), 10_000, 'a reminder')
        await until(async () => (await health(r)).code === 503, 5_000, '/healthz to say 503')
        const h = await health(r)
        expect(['store failing', 'stalled']).toContain(h.body.status)
        expect(h.body.failing).toMatchObject({ what: 'claiming effects' })
        expect(String((h.body.failing as { error: string }).error)).toMatch(/lock timeout/)
      } finally {
        await lock.release()
      }
      await until(() => lines.some((l) => /recovered after/.test(l)), 10_000, 'the recovery line')
      // The relay works again: an effect submitted now is sent.
      const done = await (await outbox.submit({ thread: 'agent', target: 't1', action: 'do', args: {} })).result()
      expect(done.status).toBe('committed')
      await until(async () => (await health(r)).code === 200, 5_000, '/healthz back to 200')
    } finally {
      await r.stop()
      await outbox.close()
      await store.close()
    }
    const claims = lines.filter((l) => l.includes('claiming effects'))
    expect(claims.filter((l) => / failed: /.test(l))).toHaveLength(1)
    expect(claims[0]).toMatch(/^relay health-relay: claiming effects failed: .*lock timeout.*\(55P03\); retrying$/)
    const reminders = claims.filter((l) => /still failing after/.test(l))
    expect(reminders.length).toBeGreaterThanOrEqual(1)
    expect(reminders[0]).toMatch(/still failing after [\d.]+ s, \d+ attempts: .*lock timeout/)
    const recovered = claims.filter((l) => /recovered after/.test(l))
    expect(recovered).toHaveLength(1)
    const m = /recovered after ([\d.]+) s, (\d+) failed attempts$/.exec(recovered[0]!)
    expect(m, recovered[0]).not.toBeNull()
    expect(Number(m![1])).toBeGreaterThan(0)
    expect(Number(m![2])).toBeGreaterThan(reminders.length)
    // Failing, reminders, recovery: in that order, and nothing about claims after it.
    expect(claims.at(-1)).toBe(recovered[0])
  })

  it('statement_timeout ends a wait that lock_timeout leaves to the server', async () => {
    const { store, schema } = await open({ lockTimeoutMs: 0, statementTimeoutMs: 200 })
    const lines: string[] = []
    const r = relay(store, lines, { stallMs: 60_000 })
    await r.start()
    const lock = await lockEffects(schema)
    try {
      await until(() => lines.some((l) => l.includes('claiming effects failed')), 10_000, 'the failed claim')
    } finally {
      await lock.release()
      await r.stop()
      await store.close()
    }
    expect(lines.find((l) => l.includes('claiming effects failed'))).toMatch(/statement timeout.*\(57014\)/)
  })

  it('a hand-built store config gets the default limits: a claim behind a lock gives up after lock_timeout (5 s), not never', async () => {
    const { store, schema } = await open({})
    const lines: string[] = []
    const r = relay(store, lines, { stallMs: 60_000 })
    await r.start()
    const lock = await lockEffects(schema)
    const started = Date.now()
    try {
      await until(() => lines.some((l) => l.includes('claiming effects failed')), 15_000, 'the failed claim')
    } finally {
      await lock.release()
      await r.stop()
      await store.close()
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_000)
    expect(lines.find((l) => l.includes('claiming effects failed'))).toMatch(/lock timeout.*\(55P03\)/)
  })
})
