/**
 * Upgrading to seals with effects in flight: a store written as the
 * release before seals wrote it (every record the gate wrote signed on its
 * own, crypto/record-signature.ts; the outbox agent's proposals waiting; an
 * effect left DISPATCHED by a send whose outcome never came) is drained by
 * a relay that seals its commits (crypto/seal.ts). Every effect settles
 * once, and `outbox verify` with the relay key checks both kinds of record
 * in the same journals. (The schema's own upgrade, the seals table added
 * under older journals, is stores/postgres-chain.test.ts's.)
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { OperatorConfig } from '../../../src/core/config/types.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { recordSigner } from '../../../src/core/crypto/record-signature.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { verifyStore } from '../../../src/core/outbox/verify-sources.js'
import { Relay } from '../../../src/core/relay/relay.js'
import { signingStore } from '../../../src/core/stores/signing-store.js'
import { gateWorld, policy, refund } from '../../helpers/gate-world.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox } from '../../helpers/outbox-stores.js'

const relayKey = generateKeyPair('relay', 'relay-1')
const operators: OperatorConfig[] = []
const withKeys = { operators, policy, relays: [{ name: 'relay-1', publicKey: relayKey.publicKey }] }

afterAll(() => dropOutboxDatabase())

describe.each([
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
] as const)('upgrading to seals on %s', (_name, make) => {
  it('effects in flight under per-record signatures are finished by a sealing relay; verify checks both in one journal', async () => {
    // As the release before seals wrote: the inline gate signs each record with the relay key.
    const w = await gateWorld(make, {}, (store) => signingStore(store, recordSigner({ key: relayKey, id: 'relay-1', role: 'relay' })))
    try {
      expect((await w.gate.submit(refund('11.00'))).status).toBe('committed')
      w.payments.faults.push({ kind: 'unknown', afterApplying: true })
      const stranded = await w.gate.submit(refund('12.00'))
      expect(stranded.status).toBe('in_flight')
      expect((await w.store.get(stranded.effectId))?.state).toBe('DISPATCHED')
      const outbox = new Outbox({ store: w.store, targets: [w.payments, w.mail] })
      const waiting = await Promise.all([outbox.submit(refund('13.00')), outbox.submit(refund('14.00', 'agent-2'))])
      expect(await w.store.seals()).toEqual([])
      const legacy = await verifyStore(w.store, withKeys)
      expect(legacy).toMatchObject({ ok: true, writers: { sealed: 0, unsigned: 0 } })

      // The upgraded relay takes over: the proposals, and the stranded send once its lease-free DISPATCHED is claimed.
      const relay = new Relay({ store: w.store, targets: [w.payments, w.mail], policy, relayId: 'relay-1', key: relayKey, pollMs: 10, retry: { maxAttempts: 2, backoffMs: 0 } })
      await relay.start()
      const outcomes = await Promise.all(waiting.map((h) => h.result()))
      expect(outcomes.map((o) => o.status)).toEqual(['committed', 'committed'])
      await expect.poll(async () => (await w.store.get(stranded.effectId))?.state, { timeout: 30_000 }).toBe('COMMITTED')
      await relay.stop()
      await outbox.close()
      // Tier 1, re-applied under its idempotency key: the service applied each refund once.
      for (const [id, count] of w.payments.applied) expect(count, id).toBe(1)

      const report = await verifyStore(w.store, withKeys)
      expect(report.problems).toEqual([])
      expect(report.writers.sealed).toBeGreaterThan(0)
      // The records written before the upgrade still count under their own signatures.
      expect(report.writers.valid - report.writers.sealed).toBe(legacy.writers.valid)
      expect(report.seals).toMatchObject({ invalid: 0 })
    } finally {
      await w.close()
    }
  })
})
