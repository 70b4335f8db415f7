/**
 * reconcile-effects works under a lease it does not renew (leases.ts): a run
 * stalled past it (a stopped cron job) must not send what a relay may have
 * taken over since. The target's own ledger judges.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { StoreConfig } from '../../../src/core/config/types.js'
import { toEffect } from '../../../src/core/effect.js'
import { LEASE_MS } from '../../../src/core/reconcile/leases.js'
import { reconcileEffects } from '../../../src/core/reconcile/reconcile.js'
import { install } from '../../../src/core/stores/migrate.js'
import { openStore } from '../../../src/core/stores/open.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { journalDispatched } from '../../helpers/sqlite-gate.js'

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function leftDispatched(): Promise<{ config: StoreConfig; id: string; store: Awaited<ReturnType<typeof openStore>> }> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-reconcile-lease-'))
  dirs.push(dir)
  const config: StoreConfig = { kind: 'sqlite', path: join(dir, 'journal.db') }
  await install(config)
  const store = await openStore(config)
  const effect = toEffect({ thread: 'agent', target: 't2', action: 'do', args: { n: 1 } })
  await journalDispatched(store, effect, 2)
  return { config, id: effect.id, store }
}

describe('reconcile-effects and its lease', () => {
  it('applies a DISPATCHED tier-2 effect it finds not applied, once, while its lease is live', async () => {
    const { config, id, store } = await leftDispatched()
    const t = new CountingTarget('t2', 2)
    const result = await reconcileEffects({ store, storeConfig: config, targets: [t], olderThanMs: 0, concurrency: 1, retry: { maxAttempts: 2, backoffMs: 1 } })
    expect(result.status).toBe('clean')
    expect(t.count(id)).toBe(1)
    expect((await store.get(id))!.state).toBe('COMMITTED')
    await store.close()
  })

  it('stalled past its lease between the query and the write, it sends nothing and leaves the effect in flight', async () => {
    const { config, id, store } = await leftDispatched()
    let clock = 0
    const t = new CountingTarget('t2', 2)
    // The process stops right before the write, for longer than the lease.
    t.onApply = () => {
      clock += LEASE_MS
    }
    const result = await reconcileEffects({
      store,
      storeConfig: config,
      targets: [t],
      olderThanMs: 0,
      concurrency: 1,
      retry: { maxAttempts: 2, backoffMs: 1 },
      monotonic: () => clock,
    })
    expect(t.queries).toContain(id)
    expect(t.calls.get(id)).toBe(1)
    expect(t.count(id)).toBe(0)
    expect(result.status).toBe('unfinished')
    expect((await store.get(id))!.state).toBe('DISPATCHED')
    await store.close()
  })
})
