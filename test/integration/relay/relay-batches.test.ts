/**
 * What a relay's claimed batch costs the PostgreSQL server: its AUTHORIZED and
 * DISPATCHED chains go in one set-based commit (append_chains(),
 * schemas/postgres/0004_append_chain.sql), never through the per-request
 * loop (append_each()), and a chain that leaves its effect DISPATCHED wakes
 * no relay (notify.ts): only the COMMITTED commit notifies, on "settled".
 * A claim takes at most half a target's concurrency, so that one batch is
 * worked on while another's commit is at the store.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { Relay } from '../../../src/core/relay/relay.js'
import { openStore } from '../../../src/core/stores/open.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

const EFFECTS = 48
const BATCH = 16

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
  // Calls of PL/pgSQL functions are counted in pg_stat_user_functions (a superuser's setting: the test server's user is one).
  const admin = new pg.Client({ connectionString: db.url })
  await admin.connect()
  await admin.query(`ALTER DATABASE ${new URL(db.url).pathname.slice(1)} SET track_functions = 'pl'`)
  await admin.end()
})
afterAll(async () => {
  await db?.drop()
})

interface Drained {
  calls: Map<string, number>
  heard: Map<string, number>
  claimed: number
  /** Claim queries sent (each claimed batch is one; some found nothing). */
  claims: number
  /** How many effects each claim that found some took. */
  batchSizes: number[]
}

/** Proposes EFFECTS effects, then drains them with one relay claiming BATCH at a time; counts function calls and notifications during the drain. */
async function drain(schema: string): Promise<Drained> {
  // The agents' store appends one proposal at a time, each notifying at its own commit: all of them
  // notified before the listener starts, which then hears the relay's commits only.
  const agents = await openStore({ kind: 'postgres', url: db.url, schema }, { autoInstall: true, groupCommit: false })
  const store = await openStore({ kind: 'postgres', url: db.url, schema })
  const target = new CountingTarget('t1', 1)
  const outbox = new Outbox({ store: agents, targets: [target] })
  const handles = await Promise.all(Array.from({ length: EFFECTS }, (_, i) => outbox.submit({ thread: `agent-${i % 5}`, target: 't1', action: 'do', args: { i } })))
  const listener = new pg.Client({ connectionString: db.url })
  await listener.connect()
  const heard = new Map<string, number>()
  listener.on('notification', (n) => {
    if (n.payload === schema) heard.set(n.channel, (heard.get(n.channel) ?? 0) + 1)
  })
  await listener.query('LISTEN interlock_ready; LISTEN interlock_settled')
  const before = await functionCalls(schema)
  const batchSizes: number[] = []
  const claim = store.claim.bind(store)
  store.claim = async (request) => {
    const claimed = await claim(request)
    if (claimed.length > 0) batchSizes.push(claimed.length)
    return claimed
  }
  const relay = new Relay({ store, targets: [target], relayId: 'r1', key: generateKeyPair('relay', 'batches'), policy: new RulesPolicy([]), concurrency: BATCH, pollMs: 20 })
  await relay.start()
  const outcomes = await Promise.all(handles.map((h) => h.result()))
  expect(outcomes.every((o) => o.status === 'committed')).toBe(true)
  const stats = await relay.stop()
  const claims = relay.metrics.claimQueries
  await outbox.close()
  await agents.close()
  await store.close()
  // Notifications are delivered after their commit: give the last one time to arrive.
  await new Promise((r) => setTimeout(r, 200))
  await listener.end()
  // A backend reports its counts when it ends: wait until the store's connections have reported (counts stop changing).
  let calls = new Map<string, number>()
  let last = ''
  for (let tries = 0; tries < 50; tries++) {
    const after = await functionCalls(schema)
    calls = new Map([...after].map(([f, n]) => [f, n - (before.get(f) ?? 0)]))
    const now = JSON.stringify([...calls].sort())
    if (now === last && (calls.get('append_chains') ?? 0) >= 1 && (calls.get('append') ?? 0) >= 1) break
    last = now
    await new Promise((r) => setTimeout(r, 300))
  }
  return { calls, heard, claimed: stats.claimed, claims, batchSizes }
}

async function functionCalls(schema: string): Promise<Map<string, number>> {
  const c = new pg.Client({ connectionString: db.url })
  await c.connect()
  try {
    const { rows } = await c.query<{ funcname: string; calls: string }>(`SELECT funcname, calls FROM pg_stat_user_functions WHERE schemaname = $1`, [schema])
    return new Map(rows.map((r) => [r.funcname, Number(r.calls)]))
  } finally {
    await c.end()
  }
}

describe('a relay on PostgreSQL, batch by batch', () => {
  let drained: Drained
  beforeAll(async () => {
    drained = await drain('batches')
  })

  it("writes each claimed batch's AUTHORIZED and DISPATCHED chains set-based, never through the per-request loop", () => {
    expect(drained.claimed).toBe(EFFECTS)
    expect(drained.calls.get('append_each') ?? 0).toBe(0)
    // One commit for a batch's chains (append_chains()) and one for its outcomes, which chain nothing (append(),
    // set-based: each effect named once); batches in flight at once may share them.
    // (append_step is left out: the agents' proposals, one per commit, report theirs whenever their connections do.)
    const chains = drained.calls.get('append_chains') ?? 0
    const outcomes = drained.calls.get('append') ?? 0
    expect(chains).toBeGreaterThanOrEqual(1)
    expect(outcomes).toBeGreaterThanOrEqual(1)
    expect(chains + outcomes).toBeLessThanOrEqual(2 * drained.claims)
  })

  it('claims half its concurrency at a time, so that batches overlap', () => {
    expect(drained.batchSizes.reduce((a, b) => a + b, 0)).toBe(EFFECTS)
    expect(Math.max(...drained.batchSizes)).toBe(BATCH / 2)
  })

  it('wakes no relay with the chains that leave effects DISPATCHED; the outcomes wake those waiting for results', () => {
    expect(drained.heard.get('interlock_ready') ?? 0).toBe(0)
    expect(drained.heard.get('interlock_settled') ?? 0).toBeGreaterThanOrEqual(1)
  })
})
