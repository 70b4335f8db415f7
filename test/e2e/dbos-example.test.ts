/**
 * examples/dbos/returns.ts, a real DBOS app on the embedded PostgreSQL, run
 * as its README says: a workflow of three Interlock steps (a Stripe refund,
 * tier 1; an S3 credit note, tier 2; a SendGrid email, tier 3), its journal in
 * DBOS's own system database under the schema "interlock".
 *
 * The process is SIGKILLed inside a step, after the service applied the
 * effect and before DBOS checkpointed the step (Interlock's crash point
 * `after-apply`, armed through INTERLOCK_CRASH_AT; "@n" picks the n-th step's
 * pass). A second process launches DBOS, which recovers the workflow and runs
 * that step again. Truth is the emulators' ledgers:
 *
 * - tier 1 and 2: applied once, and the workflow ends well;
 * - tier 3: the email is not sent again; the workflow ends with the AMBIGUOUS
 *   error naming the effect and `interlock outbox resolve`;
 * - killed after Interlock journaled COMMITTED (before DBOS's checkpoint),
 *   even tier 3 is answered from the journal: sent once, the workflow ends well.
 *
 * A refund a rule holds for operators waits in the workflow, durably: the
 * process is SIGKILLed while it waits, an operator releases the refund, a
 * message on the effect's wake topic is sent, and the restarted process
 * carries the workflow on from where it waited; refunded once.
 *
 * The counter-tests (dbos-bare-child.ts) make the same calls from bare DBOS
 * steps and die at the same moment: DBOS runs the step again and the service
 * applies it twice.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DBOSClient } from '@dbos-inc/dbos-sdk'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { systemClock } from '../../src/core/clock.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { releaseEffect } from '../../src/core/outbox/release.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { assertCliBuilt } from '../helpers/cli.js'
import { INTERLOCK_EVENT, wakeTopic } from '../../src/integrations/dbos/index.js'
import { checkpointedSteps, exampleProject, query, runNode, startEmulators, startNode, stopAll, type Emulators, type ExampleProject, type NodeRun } from '../helpers/dbos-world.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'

let db: TestDatabase
let project: ExampleProject
let world: Emulators
let seq = 0

beforeAll(async () => {
  assertCliBuilt()
  db = await createTestDatabase()
  project = exampleProject()
})
afterAll(async () => {
  stopAll()
  project?.cleanup()
  await db?.drop()
})
beforeEach(async () => {
  world = await startEmulators(db.url)
})
afterEach(async () => {
  stopAll()
  await world.close()
})

interface Order {
  id: string
  charge: string
  amount: string
  currency: string
  email: string
}

/** A workflow id and an order of its own, with its charge seeded at Stripe. */
function newOrder(): { workflowID: string; order: Order } {
  const n = ++seq
  const order = { id: `order-${n}`, charge: `ch_${n}`, amount: '12.50', currency: 'usd', email: `customer${n}@example.com` }
  world.stripe.seedCharge({ id: order.charge, amount: 100_000, currency: 'usd' })
  return { workflowID: `return-${n}-${Date.now()}`, order }
}

function run(args: string[], env: Record<string, string> = {}): Promise<NodeRun> {
  return runNode(project.dir, 'returns.ts', args, { ...world.env, DBOS_LOG_LEVEL: 'error', ...env })
}

/** What each service applied for this order: refunds on its charge, credit notes put at its key, emails to its customer. */
function applied(order: Order): { refunds: number; notes: number; mails: number } {
  return {
    refunds: world.stripe.refunds.filter((r) => r.charge === order.charge).length,
    notes: world.s3.requests.filter((r) => r.method === 'PUT' && r.path === `/credit-notes/${order.id}.json`).length,
    mails: world.sendgrid.sent.filter((m) => JSON.stringify(m.body).includes(order.email)).length,
  }
}

async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore({ kind: 'postgres', url: db.url, schema: 'interlock' })
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

describe('the DBOS example, run to its end', () => {
  it('refunds, files the credit note and emails once, each an effect of its own workflow and step, journaled in DBOS\'s own database', async () => {
    const { workflowID, order } = newOrder()
    const r = await run(['start', workflowID, JSON.stringify(order)])
    expect(r.json, r.stderr).toMatchObject({ workflowID, status: 'SUCCESS' })
    expect(applied(order)).toEqual({ refunds: 1, notes: 1, mails: 1 })

    const ids = r.json!.result as { refund: string; note: string; mail: string }
    await withStore(async (store) => {
      for (const [step, id] of [['refund', ids.refund], ['credit-note', ids.note], ['email', ids.mail]] as const) {
        const snap = await store.get(id)
        expect(snap?.state).toBe('COMMITTED')
        expect(snap?.effect.thread).toBe(`dbos:${workflowID}`)
        expect(snap?.effect.key).toMatch(new RegExp(`^${step}#\\d+$`))
      }
    })
    // One database, two schemas: DBOS's checkpoints and Interlock's journal side by side.
    const schemas = await query<{ table_schema: string }>(db.url, "SELECT DISTINCT table_schema FROM information_schema.tables WHERE table_schema IN ('dbos', 'interlock') ORDER BY 1")
    expect(schemas.map((s) => s.table_schema)).toEqual(['dbos', 'interlock'])
    expect((await checkpointedSteps(db.url, workflowID)).map((s) => s.name)).toEqual(['refund', 'credit-note', 'email'])
  })
})

describe('the DBOS example SIGKILLed inside a step, after the service applied the effect and before DBOS checkpointed the step', () => {
  it('tier 1 (Stripe): DBOS runs the refund step again, Stripe keeps one refund, the workflow ends well', async () => {
    const { workflowID, order } = newOrder()
    const killed = await run(['start', workflowID, JSON.stringify(order)], { INTERLOCK_CRASH_AT: 'after-apply@1' })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    expect(applied(order)).toEqual({ refunds: 1, notes: 0, mails: 0 })
    expect(await checkpointedSteps(db.url, workflowID)).toEqual([])

    const resumed = await run(['resume', workflowID])
    expect(resumed.json, resumed.stderr).toMatchObject({ workflowID, status: 'SUCCESS' })
    expect(applied(order)).toEqual({ refunds: 1, notes: 1, mails: 1 })
    // Recovering, the Stripe target looks for a refund carrying the effect id before any POST (refund-lookup.ts): found.
    const refundId = (resumed.json!.result as { refund: string }).refund
    expect(world.stripe.requests.filter((q) => q.method === 'POST' && q.idempotencyKey === refundId)).toHaveLength(1)
    expect(world.stripe.requests.some((q) => q.method === 'GET' && q.path === '/v1/refunds')).toBe(true)
    expect(world.stripe.count(refundId)).toBe(1)
    await withStore(async (store) => expect((await store.get(refundId))?.detail).toMatchObject({ receipt: { found: true } }))
  })

  it('tier 2 (S3): DBOS runs the credit-note step again, Interlock finds the note and puts nothing, the workflow ends well', async () => {
    const { workflowID, order } = newOrder()
    const killed = await run(['start', workflowID, JSON.stringify(order)], { INTERLOCK_CRASH_AT: 'after-apply@2' })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    expect(applied(order)).toEqual({ refunds: 1, notes: 1, mails: 0 })
    expect((await checkpointedSteps(db.url, workflowID)).map((s) => s.name)).toEqual(['refund'])

    const resumed = await run(['resume', workflowID])
    expect(resumed.json, resumed.stderr).toMatchObject({ workflowID, status: 'SUCCESS' })
    expect(applied(order)).toEqual({ refunds: 1, notes: 1, mails: 1 })
    const noteId = (resumed.json!.result as { note: string }).note
    await withStore(async (store) => expect((await store.get(noteId))?.detail).toMatchObject({ via: 'query' }))
  })

  it('tier 3 (SendGrid): DBOS runs the email step again, Interlock sends nothing and the workflow ends AMBIGUOUS, naming the effect and the resolve command', async () => {
    const { workflowID, order } = newOrder()
    const killed = await run(['start', workflowID, JSON.stringify(order)], { INTERLOCK_CRASH_AT: 'after-apply@3' })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    expect(applied(order)).toEqual({ refunds: 1, notes: 1, mails: 1 })

    const resumed = await run(['resume', workflowID])
    expect(resumed.code).toBe(1)
    const error = (resumed.json as { status: string; error: { code: string; effectId: string; message: string; hint: string } } | undefined)
    expect(error?.status, resumed.stdout + resumed.stderr).toBe('ERROR')
    const { code, effectId, message, hint } = error!.error
    expect(code).toBe('E_EFFECT_AMBIGUOUS')
    expect(effectId).toMatch(/^[0-9a-f]{64}$/)
    expect(message).toContain(`AMBIGUOUS: this call (send on mail, effect ${effectId}) was sent, and nobody can know whether it took effect`)
    expect(message).toContain(`(step "email" of DBOS workflow ${workflowID})`)
    expect(hint).toContain(`interlock outbox resolve ${effectId} --applied`)
    expect(applied(order)).toEqual({ refunds: 1, notes: 1, mails: 1 })

    const [status] = await query<{ status: string }>(db.url, 'SELECT status FROM dbos.workflow_status WHERE workflow_uuid = $1', [workflowID])
    expect(status?.status).toBe('ERROR')
    await withStore(async (store) => expect((await store.get(effectId))?.state).toBe('AMBIGUOUS'))
  })

  it('tier 3, killed after Interlock journaled COMMITTED: the journal answers the re-run step, the email went once, the workflow ends well', async () => {
    const { workflowID, order } = newOrder()
    const killed = await run(['start', workflowID, JSON.stringify(order)], { INTERLOCK_CRASH_AT: 'after-committed@3' })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    expect((await checkpointedSteps(db.url, workflowID)).map((s) => s.name)).toEqual(['refund', 'credit-note'])

    const resumed = await run(['resume', workflowID])
    expect(resumed.json, resumed.stderr).toMatchObject({ workflowID, status: 'SUCCESS' })
    expect(applied(order)).toEqual({ refunds: 1, notes: 1, mails: 1 })
    expect(world.sendgrid.requests.filter((q) => q.method === 'POST' && q.path === '/v3/mail/send')).toHaveLength(1)
  })
})

describe('counter-tests: the same calls from bare DBOS steps, SIGKILLed at the same moment', () => {
  const repo = join(import.meta.dirname, '../..')
  const bare = (args: string[], env: Record<string, string> = {}) => runNode(repo, 'test/e2e/dbos-bare-child.ts', args, { ...world.env, ...env })

  it.each([
    ['refund', { refunds: 2, notes: 0, mails: 1 }],
    ['email', { refunds: 1, notes: 0, mails: 2 }],
  ] as const)('killed after the %s landed: DBOS runs the step again and the service applies it twice', async (step, twice) => {
    const { workflowID, order } = newOrder()
    const killed = await bare(['start', workflowID, JSON.stringify(order)], { BARE_CRASH_AFTER: step })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')

    const resumed = await bare(['resume', workflowID])
    expect(resumed.json, resumed.stderr).toMatchObject({ workflowID, status: 'SUCCESS' })
    expect(applied(order)).toEqual(twice)
  })
})

describe('the DBOS example with a refund held for operators', () => {
  const alice = generateKeyPair('operator', 'alice')
  const rule = { name: 'large-refunds', target: 'payments', when: [{ arg: 'amount', above: '100.00', currency: 'USD' }], quorum: 1, releaseTtlMs: 3_600_000 }

  /** The example's interlock.toml, plus an operator and a rule holding refunds above 100.00 USD. */
  function heldConfig(): string {
    const file = join(project.dir, 'held.toml')
    const extra = `
[[operators]]
name = "alice"
public_key = "${alice.publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "payments"
when = [{ arg = "amount", above = "100.00", currency = "USD" }]
quorum = 1
`
    writeFileSync(file, readFileSync(join(project.dir, 'interlock.toml'), 'utf8') + extra)
    return file
  }

  it('waits for the release without a step retry, across a SIGKILL, and refunds once when released and woken', async () => {
    const config = heldConfig()
    const { workflowID, order } = newOrder()
    order.amount = '250.00'
    const client = await DBOSClient.create({ systemDatabaseUrl: db.url })
    try {
      const first = startNode(project.dir, 'returns.ts', ['start', workflowID, JSON.stringify(order)], { ...world.env, DBOS_LOG_LEVEL: 'error', INTERLOCK_CONFIG: config })
      let waiting: Record<string, string> | null = null
      // Until the child has launched, DBOS's tables may not exist yet in this database.
      for (let i = 0; i < 300 && !waiting; i++) {
        waiting = await client.getEvent<Record<string, string>>(workflowID, INTERLOCK_EVENT, { timeoutSeconds: 0.1 }).catch(() => null)
        if (!waiting) await new Promise((r) => setTimeout(r, 50))
      }
      expect(waiting).toMatchObject({ step: 'refund', status: 'held', rule: 'large-refunds' })
      first.child.kill('SIGKILL')
      expect((await first.done).signal).toBe('SIGKILL')
      expect(applied(order)).toEqual({ refunds: 0, notes: 0, mails: 0 })
      // The submit step ended well, its HELD outcome checkpointed: nothing failed, nothing to retry.
      expect(await checkpointedSteps(db.url, workflowID)).toContainEqual({ name: 'refund', error: false })

      const effectId = waiting!.effectId!
      await withStore(async (store) => {
        await releaseEffect({ store, operators: [{ name: 'alice', publicKey: alice.publicKey }], policy: new RulesPolicy([rule]), key: alice, clock: systemClock }, effectId)
      })
      await client.send(workflowID, 'released', wakeTopic(effectId))

      const resumed = await run(['resume', workflowID], { INTERLOCK_CONFIG: config })
      expect(resumed.json, resumed.stdout + resumed.stderr).toMatchObject({ workflowID, status: 'SUCCESS', result: { refund: effectId } })
      expect(applied(order)).toEqual({ refunds: 1, notes: 1, mails: 1 })
      expect(world.stripe.count(effectId)).toBe(1)
    } finally {
      await client.destroy()
    }
  })
})

describe('the package entry points', () => {
  /** What importing `specifier` from the example's project resolves under @dbos-inc/ (module.registerHooks sees import and require alike). */
  async function dbosModulesLoadedBy(specifier: string): Promise<number> {
    const probe = join(project.dir, 'probe.mjs')
    writeFileSync(
      probe,
      `import { registerHooks } from 'node:module'
const seen = []
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.push(r.url); return r } })
await import(process.argv[2])
console.log(JSON.stringify({ dbos: seen.filter((u) => u.includes('/@dbos-inc/')).length, seen: seen.length }))
`,
    )
    const r = await runNode(project.dir, 'probe.mjs', [specifier], {})
    expect(r.json, r.stderr).toBeDefined()
    expect(r.json!.seen).toBeGreaterThan(10)
    return r.json!.dbos as number
  }

  it("importing agent-interlock loads nothing of DBOS; agent-interlock/dbos does (DBOS is an optional peer, the subpath's alone)", async () => {
    expect(await dbosModulesLoadedBy('agent-interlock')).toBe(0)
    expect(await dbosModulesLoadedBy('agent-interlock/dbos')).toBeGreaterThan(0)
  })
})
