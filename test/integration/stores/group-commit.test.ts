/**
 * Group commit really batches: concurrent appends become one underlying
 * append (one transaction), each caller gets its own results back, and a
 * failed batch fails every caller in it and nobody else.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { IllegalTransitionError, StoreError, StoreUnavailableError } from '../../../src/core/errors.js'
import { withGroupCommit } from '../../../src/core/stores/group-commit.js'
import { install } from '../../../src/core/stores/migrate.js'
import { openPostgresStore } from '../../../src/core/stores/postgres/open.js'
import { openSqliteStore } from '../../../src/core/stores/sqlite/open.js'
import type { AppendRequest, AppendResult, Store } from '../../../src/core/stores/store.js'
import { effect, move, ok, propose } from '../../contract/fixtures.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

/** Wraps a store and records every underlying append (= every transaction); everything else passes through. */
function counting(inner: Store): Store & { batches: number[] } {
  const batches: number[] = []
  const append = (requests: AppendRequest[]) => {
    batches.push(requests.length)
    return inner.append(requests)
  }
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'append') return append
      if (prop === 'batches') return batches
      const value: unknown = Reflect.get(target, prop)
      return typeof value === 'function' ? value.bind(target) : value
    },
  }) as Store & { batches: number[] }
}

const dir = mkdtempSync(join(tmpdir(), 'interlock-group-commit-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
const toClose: Store[] = []
afterEach(async () => {
  for (const s of toClose.splice(0)) await s.close()
})

function sqlite(): { inner: Store & { batches: number[] }; store: Store } {
  const inner = counting(openSqliteStore(join(dir, `gc-${++n}.db`), { autoInstall: true }))
  const store = withGroupCommit(inner)
  toClose.push(store)
  return { inner, store }
}

describe('group commit over SQLite', () => {
  it('64 concurrent submits share one transaction; each caller gets its own record', async () => {
    const { inner, store } = sqlite()
    const effects = Array.from({ length: 64 }, (_, i) => effect(`thread-${i % 4}`, i))
    const results = await Promise.all(effects.map((e) => store.append([propose(e)])))
    expect(inner.batches).toEqual([64])
    results.forEach(([r], i) => {
      expect(ok(r).effectId).toBe(effects[i]!.id)
      expect(ok(r).state).toBe('PROPOSED')
    })
    // Per journal the seqs are 1..16 with no gaps: one transaction, four chains.
    const t0 = results.map(([r]) => ok(r)).filter((r) => r.journal === 'thread-0').map((r) => r.seq)
    expect(t0).toEqual(Array.from({ length: 16 }, (_, i) => i + 1))

    const moved = await Promise.all(effects.map((e) => store.append([move(e, 'PROPOSED', 'AUTHORIZED')])))
    expect(inner.batches).toEqual([64, 64])
    moved.forEach(([r], i) => expect(ok(r).effectId).toBe(effects[i]!.id))
  })

  it('keeps each caller’s several requests together and in order', async () => {
    const { inner, store } = sqlite()
    const [a, b] = [effect('t', 1), effect('t', 2)]
    const [ra, rb] = await Promise.all([
      store.append([propose(a), move(a, 'PROPOSED', 'AUTHORIZED')]),
      store.append([propose(b)]),
    ])
    expect(inner.batches).toEqual([3])
    expect(ra!.map((r) => ok(r).state)).toEqual(['PROPOSED', 'AUTHORIZED'])
    expect(rb!.map((r) => ok(r).effectId)).toEqual([b.id])
  })

  it('two callers racing on one effect in one batch: first wins, second gets ok:false with the winner’s state', async () => {
    const { inner, store } = sqlite()
    const e = effect('t', 1)
    await store.append([propose(e), move(e, 'PROPOSED', 'AUTHORIZED')])
    const [[first], [second]] = await Promise.all([
      store.append([move(e, 'AUTHORIZED', 'DISPATCHED')]),
      store.append([move(e, 'AUTHORIZED', 'REJECTED')]),
    ])
    expect(inner.batches.at(-1)).toBe(2)
    expect(first!.ok).toBe(true)
    expect(second).toMatchObject({ ok: false, current: { state: 'DISPATCHED' } })
  })

  it('an illegal transition fails only its own caller, before the batch', async () => {
    const { inner, store } = sqlite()
    const [a, b] = [effect('t', 1), effect('t', 2)]
    const [good, bad] = await Promise.allSettled([store.append([propose(a)]), store.append([move(b, 'PROPOSED', 'COMMITTED')])])
    expect(good.status).toBe('fulfilled')
    expect(bad.status === 'rejected' && bad.reason).toBeInstanceOf(IllegalTransitionError)
    expect(inner.batches).toEqual([1])
  })

  it('splits at maxBatch, never splitting one caller', async () => {
    const inner = counting(openSqliteStore(join(dir, `gc-${++n}.db`), { autoInstall: true }))
    const store = withGroupCommit(inner, { maxBatch: 10 })
    toClose.push(store)
    const effects = Array.from({ length: 25 }, (_, i) => effect('t', i))
    await Promise.all([
      store.append(effects.slice(0, 4).map((e) => propose(e))),
      ...effects.slice(4).map((e) => store.append([propose(e)])),
    ])
    expect(inner.batches).toEqual([10, 10, 5])
  })
})

describe('group commit: arrivals and failures', () => {
  /** A store whose appends wait until released, to hold a flush in progress. */
  function gated() {
    const calls: { requests: AppendRequest[]; release(fail?: Error): void }[] = []
    const store = {
      kind: 'sqlite',
      append: (requests: AppendRequest[]) =>
        new Promise<AppendResult[]>((resolve, reject) => {
          calls.push({
            requests,
            release: (fail) => (fail ? reject(fail) : resolve(requests.map((r) => ({ ok: false, current: null, id: r.effectId }) as AppendResult))),
          })
        }),
      close: async () => {},
    } as unknown as Store
    return { store, calls }
  }

  const tick = () => new Promise((resolve) => setImmediate(resolve))

  it('callers arriving during a flush are coalesced into the next one', async () => {
    const { store: inner, calls } = gated()
    const store = withGroupCommit(inner)
    const first = store.append([propose(effect('t', 0))])
    await tick()
    expect(calls).toHaveLength(1)
    const later = Array.from({ length: 10 }, (_, i) => store.append([propose(effect('t', i + 1))]))
    await tick()
    expect(calls).toHaveLength(1) // still waiting on the first flush
    calls[0]!.release()
    await first
    await tick()
    expect(calls).toHaveLength(2)
    expect(calls[1]!.requests).toHaveLength(10)
    calls[1]!.release()
    const results = await Promise.all(later)
    results.forEach(([r], i) => expect((r as unknown as { id: string }).id).toBe(effect('t', i + 1).id))
  })

  it('a failed batch rejects every caller in it with the same error, and the next batch still runs', async () => {
    const { store: inner, calls } = gated()
    const store = withGroupCommit(inner)
    const batch = Array.from({ length: 5 }, (_, i) => store.append([propose(effect('t', i))]))
    await tick()
    const failure = new StoreUnavailableError('commit not confirmed')
    calls[0]!.release(failure)
    const settled = await Promise.allSettled(batch)
    expect(settled.every((s) => s.status === 'rejected' && s.reason === failure)).toBe(true)
    const next = store.append([propose(effect('t', 9))])
    await tick()
    calls[1]!.release()
    await expect(next).resolves.toHaveLength(1)
  })

  it('a request the store refuses (checkAppend: an agent store takes proposals only) fails only its own caller, before the batch', async () => {
    const { store: inner, calls } = gated()
    const refusal = new StoreError('proposals only')
    inner.checkAppend = (requests) => {
      if (requests.some((r) => r.from !== null)) throw refusal
    }
    const store = withGroupCommit(inner)
    const [a, b] = [effect('t', 1), effect('t', 2)]
    const good = store.append([propose(a)])
    const bad = store.append([move(b, 'PROPOSED', 'AUTHORIZED')]).catch((e: unknown) => e)
    await tick()
    expect(calls.map((c) => c.requests.map((r) => r.effectId))).toEqual([[a.id]])
    calls[0]!.release()
    await expect(good).resolves.toHaveLength(1)
    expect(await bad).toBe(refusal)
  })

  it('close waits for queued appends, then refuses new ones', async () => {
    const { store: inner, calls } = gated()
    const store = withGroupCommit(inner)
    const pending = store.append([propose(effect('t', 1))])
    const closing = store.close()
    await tick()
    calls[0]!.release()
    await pending
    await closing
    await expect(store.append([propose(effect('t', 2))])).rejects.toThrow(/closed/)
  })
})

describe('group commit over PostgreSQL', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('64 concurrent submits share one transaction; results map back to their callers', async () => {
    const config = { kind: 'postgres' as const, url: db.url, schema: 'interlock' }
    await install(config)
    const inner = counting(await openPostgresStore(config, { autoInstall: false }))
    const store = withGroupCommit(inner)
    toClose.push(store)
    const effects = Array.from({ length: 64 }, (_, i) => effect(`thread-${i % 8}`, i))
    const results = await Promise.all(effects.map((e) => store.append([propose(e)])))
    expect(inner.batches).toEqual([64])
    results.forEach(([r], i) => expect(ok(r).effectId).toBe(effects[i]!.id))
    const scan = await store.scanInFlight()
    expect(scan.effects).toHaveLength(64)
    expect(scan.recordsRead).toBe(64)
  })
})
