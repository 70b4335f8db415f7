/**
 * The store contract: one suite, run against every Store implementation
 * (sqlite.test.ts, postgres.test.ts, group-commit.test.ts). A behaviour the
 * gate relies on belongs here, not in one store's own tests.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Clock } from '../../src/core/clock.js'
import { IllegalTransitionError, InputError, IntegrityError } from '../../src/core/errors.js'
import { STATES, TERMINAL_STATES, type State } from '../../src/core/lifecycle.js'
import { ChainVerifier, recordHash } from '../../src/core/stores/record-hash.js'
import { GENESIS_HASH, type JournalRecord, type Store } from '../../src/core/stores/store.js'
import { toEffect } from '../../src/core/effect.js'
import { identityJson } from '../../src/core/canonical-json.js'
import { sha256Hex } from '../../src/core/hash.js'
import { allRecords, drive, effect, move, ok, propose, tickingClock } from './fixtures.js'

export interface StoreHarness {
  /** A store on this test's database. Each call is a separate store (a separate process's worth). */
  open(options?: { clock?: Clock; pageSize?: number }): Promise<Store>
  /** SQL straight to this test's database, behind the stores' back: unqualified tables, $1..$n parameters. */
  exec(sql: string, params?: unknown[]): Promise<void>
  dispose(): Promise<void>
}

export function storeContract(name: string, makeHarness: () => Promise<StoreHarness>): void {
  describe(`Store contract: ${name}`, () => {
    let h: StoreHarness
    let store: Store
    const opened: Store[] = []
    const open = async (options: { clock?: Clock; pageSize?: number } = {}) => {
      const s = await h.open({ clock: tickingClock(), ...options })
      opened.push(s)
      return s
    }

    beforeEach(async () => {
      h = await makeHarness()
      store = await open()
    })

    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close()
      await h.dispose()
    })

    describe('append, get, history', () => {
      it('proposes an effect: record 1 on genesis, snapshot PROPOSED with effect and tier', async () => {
        const e = effect('t1', 1)
        const r = ok((await store.append([propose(e, 3, { why: 'test' })]))[0])
        expect(r).toMatchObject({ journal: 't1', seq: 1, effectId: e.id, state: 'PROPOSED', prevHash: GENESIS_HASH })
        expect(r.data).toEqual({ why: 'test', effect: { ...e }, tier: 3 })
        expect(r.hash).toBe(recordHash(r))
        const snap = await store.get(e.id)
        expect(snap).toEqual({ effect: e, tier: 3, state: 'PROPOSED', seq: 1, detail: r.data, createdAt: r.at, updatedAt: r.at })
        expect(await store.history(e.id)).toEqual([r])
      })

      it('walks the lifecycle; get follows, history returns every record in order, chained', async () => {
        const e = effect('t1', 1)
        const p = ok((await store.append([propose(e)]))[0])
        const a = ok((await store.append([move(e, 'PROPOSED', 'AUTHORIZED')]))[0])
        const d = ok((await store.append([move(e, 'AUTHORIZED', 'DISPATCHED', { attempt: 1 })]))[0])
        const c = ok((await store.append([move(e, 'DISPATCHED', 'COMMITTED', { receipt: { id: 'r_1', amount: '10.00' } })]))[0])
        expect([p, a, d, c].map((r) => r.seq)).toEqual([1, 2, 3, 4])
        expect(a.prevHash).toBe(p.hash)
        expect(d.prevHash).toBe(a.hash)
        expect(c.prevHash).toBe(d.hash)
        expect(await store.get(e.id)).toMatchObject({ state: 'COMMITTED', seq: 4, detail: { receipt: { id: 'r_1', amount: '10.00' } }, createdAt: p.at, updatedAt: c.at })
        expect(await store.history(e.id)).toEqual([p, a, d, c])
      })

      it('unknown effects: get is undefined, history is empty', async () => {
        expect(await store.get('f'.repeat(64))).toBeUndefined()
        expect(await store.history('f'.repeat(64))).toEqual([])
      })

      it('applies the requests of one call in order: propose and authorize together', async () => {
        const e = effect('t1', 1)
        const results = await store.append([propose(e), move(e, 'PROPOSED', 'AUTHORIZED')])
        expect(results.map((r) => r.ok)).toEqual([true, true])
        expect((await store.get(e.id))?.state).toBe('AUTHORIZED')
      })

      it('an empty call writes nothing', async () => {
        expect(await store.append([])).toEqual([])
        expect(await allRecords(store)).toEqual([])
      })
    })

    describe('compare-and-set', () => {
      it('a writer that believes a stale state loses with the current snapshot; nothing is written', async () => {
        const e = effect('t1', 1)
        await drive(store, e, 'AUTHORIZED')
        ok((await store.append([move(e, 'AUTHORIZED', 'DISPATCHED')]))[0])
        const [lost] = await store.append([move(e, 'AUTHORIZED', 'DISPATCHED')])
        expect(lost).toEqual({ ok: false, current: await store.get(e.id) })
        expect(lost!.ok === false && lost!.current?.state).toBe('DISPATCHED')
        expect(await store.history(e.id)).toHaveLength(3)
      })

      it('proposing an existing effect returns ok:false with the existing snapshot', async () => {
        const e = effect('t1', 1)
        await drive(store, e, 'DISPATCHED')
        const [again] = await store.append([propose(e)])
        expect(again).toEqual({ ok: false, current: await store.get(e.id) })
        expect(await store.history(e.id)).toHaveLength(3)
      })

      it('moving an effect that does not exist returns ok:false, current null', async () => {
        const e = effect('t1', 1)
        expect(await store.append([move(e, 'PROPOSED', 'AUTHORIZED')])).toEqual([{ ok: false, current: null }])
      })

      it('a losing request leaves the others of its call untouched', async () => {
        const [x, y, z] = [effect('t1', 1), effect('t1', 2), effect('t2', 3)]
        await drive(store, y, 'AUTHORIZED')
        const results = await store.append([propose(x), move(y, 'PROPOSED', 'AUTHORIZED'), propose(z)])
        expect(results.map((r) => r.ok)).toEqual([true, false, true])
        expect((await store.get(x.id))?.state).toBe('PROPOSED')
        expect((await store.get(z.id))?.state).toBe('PROPOSED')
        const t1 = (await allRecords(store)).filter((r) => r.journal === 't1')
        expect(t1.map((r) => r.seq)).toEqual([1, 2, 3])
      })

      it('two racers on one effect in one call: the first wins, the second sees its result', async () => {
        const e = effect('t1', 1)
        await drive(store, e, 'AUTHORIZED')
        const [first, second] = await store.append([move(e, 'AUTHORIZED', 'DISPATCHED'), move(e, 'AUTHORIZED', 'REJECTED')])
        expect(first!.ok).toBe(true)
        expect(second).toMatchObject({ ok: false, current: { state: 'DISPATCHED' } })
      })
    })

    describe('chained requests: several states of one effect in one commit', () => {
      const chain = (e: ReturnType<typeof effect>, steps: [State, State][], tier: 1 | 2 | 3 = 1) =>
        steps.map(([from, to], i) => ({ ...move(e, from, to, { step: to }), ...(i > 0 ? { chained: true } : {}) }))
      const proposeChain = (e: ReturnType<typeof effect>, last: 'DISPATCHED' | 'REJECTED' = 'DISPATCHED') => [
        propose(e, 1),
        { ...move(e, 'PROPOSED', 'AUTHORIZED'), chained: true },
        { ...move(e, 'AUTHORIZED', last, last === 'REJECTED' ? { violations: ['moved'] } : {}), chained: true },
      ]

      it('PROPOSED, AUTHORIZED, DISPATCHED in one call: three records, consecutive and hash-chained, one transaction time', async () => {
        const e = effect('t1', 1)
        const [p, a, d] = (await store.append(proposeChain(e))).map(ok)
        expect([p!.seq, a!.seq, d!.seq]).toEqual([1, 2, 3])
        expect([p!.state, a!.state, d!.state]).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED'])
        expect(a!.prevHash).toBe(p!.hash)
        expect(d!.prevHash).toBe(a!.hash)
        expect(new Set([p!.at, a!.at, d!.at]).size).toBe(1)
        expect(await store.get(e.id)).toMatchObject({ state: 'DISPATCHED', seq: 3, tier: 1, createdAt: p!.at })
        expect(await store.history(e.id)).toEqual([p, a, d])
        const c = ok((await store.append([move(e, 'DISPATCHED', 'COMMITTED', { receipt: { ok: true } })]))[0])
        expect(c.seq).toBe(4)
        const v = new ChainVerifier()
        for (const r of await allRecords(store)) v.check(r)
      })

      it('a chain whose first request loses writes nothing, although its later steps would have matched', async () => {
        const e = effect('t1', 1)
        await drive(store, e, 'PROPOSED')
        // The effect is PROPOSED already: the proposal loses, and so must AUTHORIZED → DISPATCHED after it.
        const results = await store.append(proposeChain(e))
        const current = await store.get(e.id)
        expect(current?.state).toBe('PROPOSED')
        expect(results).toEqual([0, 1, 2].map(() => ({ ok: false, current })))
        expect(await store.history(e.id)).toHaveLength(1)
      })

      it('a chain of moves from a stale state writes nothing, even where the effect stands at a later step of it', async () => {
        const e = effect('t1', 1)
        // Authorized by someone else meanwhile: the writer believed PROPOSED.
        await drive(store, e, 'AUTHORIZED')
        const results = await store.append(chain(e, [['PROPOSED', 'AUTHORIZED'], ['AUTHORIZED', 'DISPATCHED']]))
        expect(results.map((r) => r.ok)).toEqual([false, false])
        expect(results[1]).toMatchObject({ ok: false, current: { state: 'AUTHORIZED', seq: 2 } })
        expect((await store.get(e.id))?.state).toBe('AUTHORIZED')
        expect(await store.history(e.id)).toHaveLength(2)
      })

      it("other requests of the call (another caller's, as group commit joins them) are untouched by a chain that loses", async () => {
        const [x, y, z, w] = [effect('t1', 1), effect('t1', 2), effect('t1', 3), effect('t2', 4)]
        await drive(store, y, 'PROPOSED')
        await drive(store, w, 'AUTHORIZED')
        const results = await store.append([propose(x), ...proposeChain(y), ...proposeChain(z, 'REJECTED'), move(w, 'AUTHORIZED', 'DISPATCHED')])
        expect(results.map((r) => r.ok)).toEqual([true, false, false, false, true, true, true, true])
        expect((await store.get(x.id))?.state).toBe('PROPOSED')
        expect((await store.get(y.id))?.state).toBe('PROPOSED')
        expect((await store.get(z.id))?.state).toBe('REJECTED')
        expect((await store.get(w.id))?.state).toBe('DISPATCHED')
        const t1 = (await allRecords(store)).filter((r) => r.journal === 't1')
        expect(t1.map((r) => [r.seq, r.state])).toEqual([
          [1, 'PROPOSED'],
          [2, 'PROPOSED'],
          [3, 'PROPOSED'],
          [4, 'AUTHORIZED'],
          [5, 'REJECTED'],
        ])
        expect(t1.slice(2).map((r) => r.effectId)).toEqual([z.id, z.id, z.id])
      })

      it('concurrent calls, chains among them: each chain is whole or absent, every journal verifies', async () => {
        const effects = Array.from({ length: 12 }, (_, i) => effect(`t${i % 3}`, i))
        // Half are proposed first, so their chains lose; the calls all go at once (group commit joins them).
        for (const e of effects.filter((_, i) => i % 2 === 0)) await drive(store, e, 'PROPOSED')
        const results = await Promise.all(effects.map((e) => store.append(proposeChain(e))))
        for (const [i, r] of results.entries()) expect(r.map((x) => x.ok)).toEqual(i % 2 === 0 ? [false, false, false] : [true, true, true])
        for (const [i, e] of effects.entries()) expect(await store.history(e.id)).toHaveLength(i % 2 === 0 ? 1 : 3)
        const v = new ChainVerifier()
        for (const r of await allRecords(store)) v.check(r)
      })

      it('a chained request that does not continue the one before it is refused before anything is written', async () => {
        const [e, other] = [effect('t1', 1), effect('t1', 2)]
        await expect(store.append([propose(e), { ...move(other, 'PROPOSED', 'AUTHORIZED'), chained: true }])).rejects.toBeInstanceOf(InputError)
        await expect(store.append([propose(e), { ...move(e, 'AUTHORIZED', 'DISPATCHED'), chained: true }])).rejects.toThrow(/does not continue/)
        await expect(store.append([{ ...propose(e), chained: true }])).rejects.toThrow(/does not continue/)
        expect(await store.get(e.id)).toBeUndefined()
      })
    })

    describe('the lifecycle is enforced', () => {
      it('an illegal transition rejects the whole call, naming both states; nothing is written', async () => {
        const [e, other] = [effect('t1', 1), effect('t1', 2)]
        await drive(store, e, 'PROPOSED')
        const call = store.append([propose(other), move(e, 'PROPOSED', 'COMMITTED')])
        await expect(call).rejects.toBeInstanceOf(IllegalTransitionError)
        await expect(call).rejects.toThrow(/PROPOSED → COMMITTED/)
        expect(await store.get(other.id)).toBeUndefined()
        expect(await store.history(e.id)).toHaveLength(1)
      })

      it.each([
        ['COMMITTED', 'DISPATCHED'],
        ['REJECTED', 'AUTHORIZED'],
        ['HELD', 'DISPATCHED'],
        ['PROPOSED', 'PROPOSED'],
      ] as [State, State][])('refuses %s → %s', async (from, to) => {
        const e = effect('t1', 1)
        await expect(store.append([move(e, from, to)])).rejects.toThrow(`${from} → ${to}`)
      })

      it('a proposal without its effect is refused', async () => {
        const e = effect('t1', 1)
        await expect(store.append([{ effectId: e.id, from: null, to: 'PROPOSED', data: {} }])).rejects.toBeInstanceOf(InputError)
      })
    })

    describe('hash chain', () => {
      it('chains per journal across appends, calls and effects; records() verifies and comes in (journal, seq) order', async () => {
        for (let i = 0; i < 5; i++) {
          await drive(store, effect('b-journal', i), 'COMMITTED')
          await drive(store, effect('a-journal', i), i % 2 ? 'DISPATCHED' : 'HELD')
        }
        const records = await allRecords(store)
        const verifier = new ChainVerifier()
        for (const r of records) verifier.check(r)
        const keys = records.map((r) => `${r.journal}#${String(r.seq).padStart(4, '0')}`)
        expect(keys).toEqual([...keys].sort())
        expect(records.filter((r) => r.journal === 'b-journal').map((r) => r.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
        expect(records.filter((r) => r.journal === 'a-journal')).toHaveLength(2 + 3 + 2 + 3 + 2)
      })

      it('records(after) starts each journal given past its seq, and reads the others whole, in (journal, seq) order', async () => {
        const small = await open({ pageSize: 3 })
        for (let i = 0; i < 9; i++) await drive(small, effect(`j${i % 3}`, i), 'COMMITTED')
        const all = await allRecords(small)
        const read: string[] = []
        for await (const r of small.records(new Map([['j0', 5], ['j2', 12], ['absent', 3]]))) read.push(`${r.journal}#${r.seq}`)
        const expected = all.filter((r) => (r.journal === 'j0' ? r.seq > 5 : r.journal === 'j2' ? false : true)).map((r) => `${r.journal}#${r.seq}`)
        expect(read).toEqual(expected)
        expect(read[0]).toBe('j0#6')
      })

      it('records() pages through long journals without losing or repeating a record', async () => {
        const small = await open({ pageSize: 3 })
        for (let i = 0; i < 4; i++) await drive(small, effect(`j${i % 2}`, i), 'COMMITTED')
        const records = await allRecords(small)
        expect(records).toHaveLength(16)
        const verifier = new ChainVerifier()
        for (const r of records) verifier.check(r)
      })
    })

    describe('scanInFlight', () => {
      it('returns exactly the effects not in a terminal state, as get() sees them', async () => {
        const byState = new Map<State, string>()
        for (const [i, state] of STATES.entries()) {
          const e = effect(i % 2 ? 'odd' : 'even', i)
          await drive(store, e, state, ((i % 3) + 1) as 1 | 2 | 3)
          byState.set(state, e.id)
        }
        const scan = await store.scanInFlight()
        const unsettled = STATES.filter((s) => !TERMINAL_STATES.includes(s))
        expect(scan.effects.map((s) => s.state).sort()).toEqual([...unsettled].sort())
        for (const snap of scan.effects) {
          expect(snap.effect.id).toBe(byState.get(snap.state))
          expect(snap).toEqual(await store.get(snap.effect.id))
          // The records it read, as history() returns them: recovery's journal checks use these.
          expect(scan.histories?.get(snap.effect.id)).toEqual(await store.history(snap.effect.id))
        }
        expect([...(scan.histories?.keys() ?? [])].sort()).toEqual(scan.effects.map((s) => s.effect.id).sort())
        // The in-flight effects' own records, not their journals: the settled ones beside them are not read.
        const ids = new Set(scan.effects.map((s) => s.effect.id))
        expect(scan.recordsRead).toBe((await allRecords(store)).filter((r) => ids.has(r.effectId)).length)
      })

      it('reads the records of the effects in flight, not the settled history around them', async () => {
        const settled = Array.from({ length: 6 }, (_, i) => effect('long', i))
        for (const e of settled.slice(0, 3)) await drive(store, e, 'COMMITTED')
        const open = effect('long', 'open')
        await drive(store, open, 'DISPATCHED')
        for (const e of settled.slice(3)) await drive(store, e, 'REJECTED')
        const scan = await store.scanInFlight()
        expect(scan.effects.map((s) => [s.effect.id, s.state, s.seq])).toEqual([[open.id, 'DISPATCHED', 15]])
        expect(scan.recordsRead).toBe(3)
      })

      it('finds nothing to read when nothing is in flight', async () => {
        await drive(store, effect('t1', 1), 'COMMITTED')
        expect(await store.scanInFlight()).toEqual({ effects: [], recordsRead: 0 })
      })

      it('lists in-flight effects oldest proposal first', async () => {
        const es = [effect('t1', 1), effect('t1', 2), effect('t1', 3)]
        for (const e of es) await drive(store, e, 'AUTHORIZED')
        expect((await store.scanInFlight()).effects.map((s) => s.effect.id)).toEqual(es.map((e) => e.id))
      })
    })

    describe('list', () => {
      it('filters by state, target and thread, newest first, with a limit', async () => {
        const a = effect('t1', 1, 'stripe')
        const b = effect('t2', 2, 'github')
        const c = effect('t1', 3, 'github')
        await drive(store, a, 'COMMITTED')
        await drive(store, b, 'DISPATCHED')
        await drive(store, c, 'AMBIGUOUS')
        const ids = async (f: Parameters<Store['list']>[0]) => (await store.list(f)).map((s) => s.effect.id)
        expect(await ids({})).toEqual([c.id, b.id, a.id])
        expect(await ids({ states: ['DISPATCHED', 'AMBIGUOUS'] })).toEqual([c.id, b.id])
        expect(await ids({ target: 'github' })).toEqual([c.id, b.id])
        expect(await ids({ thread: 't1' })).toEqual([c.id, a.id])
        expect(await ids({ thread: 't1', target: 'github', states: ['AMBIGUOUS'] })).toEqual([c.id])
        expect(await ids({ limit: 1 })).toEqual([c.id])
        expect(await ids({ states: ['HELD'] })).toEqual([])
        expect((await store.list({ target: 'stripe' }))[0]).toEqual(await store.get(a.id))
      })

      it('pages with an offset and filters by creation time', async () => {
        const es = [effect('t1', 1), effect('t2', 2), effect('t1', 3), effect('t2', 4)]
        for (const e of es) await drive(store, e, 'COMMITTED')
        const newest = [...es].reverse().map((e) => e.id)
        const ids = async (f: Parameters<Store['list']>[0]) => (await store.list(f)).map((s) => s.effect.id)
        expect(await ids({ limit: 2, offset: 0 })).toEqual(newest.slice(0, 2))
        expect(await ids({ limit: 2, offset: 2 })).toEqual(newest.slice(2, 4))
        expect(await ids({ limit: 2, offset: 4 })).toEqual([])
        expect(await ids({ offset: 3 })).toEqual(newest.slice(3))
        expect(await ids({ thread: 't2', limit: 1, offset: 1 })).toEqual([es[1]!.id])
        const created = await Promise.all(es.map(async (e) => (await store.get(e.id))!.createdAt))
        expect(await ids({ since: created[2] })).toEqual([es[3]!.id, es[2]!.id])
        expect(await ids({ until: created[2] })).toEqual([es[1]!.id, es[0]!.id])
        expect(await ids({ since: created[1], until: created[3] })).toEqual([es[2]!.id, es[1]!.id])
      })
    })

    describe('who asked: an effect\'s principal and trace', () => {
      const asked = (thread: string, n: number, principal?: string, key?: string) =>
        toEffect({ thread, target: 'svc', action: 'do', args: { n }, premises: {}, key, principal, trace: principal ? { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`, tracestate: 'vendor=1' } : undefined })

      it('journals them with the effect (record, row, history); the principal is part of the id, the trace is not', async () => {
        const mine = asked('t1', 1, 'token:ci-bot')
        const theirs = asked('t1', 1, 'user:alice')
        const nobody = asked('t1', 1)
        expect(new Set([mine.id, theirs.id, nobody.id]).size).toBe(3)
        // Without a principal the id is what it always was.
        expect(nobody.id).toBe(sha256Hex(identityJson({ thread: 't1', target: 'svc', action: 'do', args: { n: 1 }, key: null })))
        expect(toEffect({ thread: 't1', target: 'svc', action: 'do', args: { n: 1 }, principal: 'token:ci-bot' }).id).toBe(mine.id)
        const r = ok((await store.append([propose(mine)]))[0])
        expect(r.data.effect).toEqual({ ...mine })
        expect(r.data.effect).toMatchObject({ principal: 'token:ci-bot', trace: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`, tracestate: 'vendor=1' } })
        expect((await store.get(mine.id))?.effect).toEqual(mine)
        expect((await store.history(mine.id))[0]!.data.effect).toEqual({ ...mine })
        // Another principal's identical call in a thread of the same name is another effect, proposed beside it.
        ok((await store.append([propose(theirs)]))[0])
        expect((await store.get(theirs.id))?.effect.principal).toBe('user:alice')
      })

      it('list filters by principal and by key', async () => {
        const a = asked('t1', 1, 'token:ci-bot', 'k1')
        const b = asked('t1', 2, 'token:ci-bot', 'k2')
        const c = asked('t1', 1, 'user:alice', 'k1')
        const d = effect('t1', 4)
        for (const e of [a, b, c, d]) await drive(store, e, 'COMMITTED')
        const ids = async (f: Parameters<Store['list']>[0]) => (await store.list(f)).map((s) => s.effect.id)
        expect(await ids({ principal: 'token:ci-bot' })).toEqual([b.id, a.id])
        expect(await ids({ principal: 'user:alice' })).toEqual([c.id])
        expect(await ids({ key: 'k1' })).toEqual([c.id, a.id])
        expect(await ids({ thread: 't1', target: 'svc', principal: 'token:ci-bot', key: 'k1' })).toEqual([a.id])
        expect(await ids({ thread: 't2', principal: 'token:ci-bot' })).toEqual([])
        expect(await ids({ principal: 'token:nobody' })).toEqual([])
      })
    })

    describe('thread reads (what a caller read, for premises)', () => {
      const scope = { principal: 'token:ci-bot', thread: 'conversation-1', target: 'fs' }
      const read = 'a'.repeat(64)
      const digest = (c: string) => c.repeat(64)

      it('keeps the last digest of each read per scope, apart by principal, thread and target, for every store on the database', async () => {
        expect(await store.recallRead(scope, read)).toBeUndefined()
        await store.rememberRead(scope, read, digest('1'))
        expect(await store.recallRead(scope, read)).toBe(digest('1'))
        await store.rememberRead(scope, read, digest('2'))
        expect(await store.recallRead(scope, read)).toBe(digest('2'))
        expect(await store.recallRead(scope, 'b'.repeat(64))).toBeUndefined()
        for (const other of [{ ...scope, principal: 'user:alice' }, { ...scope, thread: 'conversation-2' }, { ...scope, target: 'memory' }]) {
          expect(await store.recallRead(other, read)).toBeUndefined()
        }
        await store.rememberRead({ ...scope, principal: 'user:alice' }, read, digest('3'))
        expect(await store.recallRead(scope, read)).toBe(digest('2'))
        // Another process's store, on the same database: what was kept outlives the one that kept it.
        await store.close()
        const later = await open()
        expect(await later.recallRead(scope, read)).toBe(digest('2'))
        expect(await later.recallRead({ ...scope, principal: 'user:alice' }, read)).toBe(digest('3'))
      })
    })

    describe('countByState', () => {
      it('counts the effects in every state, 0 for a state with none, as list() would', async () => {
        expect(await store.countByState()).toEqual(Object.fromEntries(STATES.map((s) => [s, 0])))
        const plan: [State, number][] = [['COMMITTED', 3], ['HELD', 2], ['AMBIGUOUS', 1], ['PROPOSED', 1]]
        let n = 0
        for (const [state, times] of plan) for (let i = 0; i < times; i++) await drive(store, effect(`t${n % 2}`, n++), state)
        const counts = await store.countByState()
        expect(counts).toEqual({ ...Object.fromEntries(STATES.map((s) => [s, 0])), COMMITTED: 3, HELD: 2, AMBIGUOUS: 1, PROPOSED: 1 })
        for (const s of STATES) expect(counts[s]).toBe((await store.list({ states: [s] })).length)
        // Only the states asked for (reconcile-effects asks for the open ones it reports).
        const zero = Object.fromEntries(STATES.map((s) => [s, 0]))
        expect(await store.countByState(['AMBIGUOUS', 'HELD'])).toEqual({ ...zero, HELD: 2, AMBIGUOUS: 1 })
        expect(await store.countByState(['COMMITTED', 'PROPOSED'])).toEqual({ ...zero, COMMITTED: 3, PROPOSED: 1 })
        // A state change moves one effect from one count to the other.
        const held = (await store.list({ states: ['HELD'] }))[0]!
        ok((await store.append([{ effectId: held.effect.id, from: 'HELD', to: 'REJECTED', data: {} }]))[0])
        expect(await store.countByState()).toMatchObject({ HELD: 1, REJECTED: 1, COMMITTED: 3 })
      })
    })

    describe('tamper evidence', () => {
      /** t1: records 1-3 x (DISPATCHED), 4-5 y (AUTHORIZED), 6-7 z (AUTHORIZED). */
      async function journal() {
        const [x, y, z] = [effect('t1', 1), effect('t1', 2), effect('t1', 3)]
        await drive(store, x, 'DISPATCHED')
        await drive(store, y, 'AUTHORIZED')
        await drive(store, z, 'AUTHORIZED')
        return { x, y, z }
      }

      async function expectIntegrity(read: Promise<unknown>, seq: number) {
        const err = await read.then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(err).toBeInstanceOf(IntegrityError)
        expect((err as IntegrityError).context).toMatchObject({ journal: 't1', seq })
        expect((err as IntegrityError).message).toContain('"t1"')
        expect((err as IntegrityError).message).toContain(`record ${seq}`)
      }

      it('detects altered data', async () => {
        const { x } = await journal()
        await h.exec(`UPDATE journal_records SET data = $1 WHERE journal = 't1' AND seq = 2`, ['{"tampered":true}'])
        await expectIntegrity(store.scanInFlight(), 2)
        await expectIntegrity(store.history(x.id), 2)
      })

      it('detects an altered state', async () => {
        const { x } = await journal()
        await h.exec(`UPDATE journal_records SET state = 'COMMITTED' WHERE journal = 't1' AND seq = 3`)
        await expectIntegrity(store.scanInFlight(), 3)
        await expectIntegrity(store.history(x.id), 3)
      })

      it('detects a deleted record', async () => {
        const { y } = await journal()
        await h.exec(`DELETE FROM journal_records WHERE journal = 't1' AND seq = 4`)
        await expectIntegrity(store.scanInFlight(), 5)
        await expectIntegrity(store.history(y.id), 5)
      })

      it('detects records removed from the end (the head points past them)', async () => {
        await journal()
        await h.exec(`DELETE FROM journal_records WHERE journal = 't1' AND seq = 7`)
        await expectIntegrity(store.scanInFlight(), 7)
      })

      it('histories read at once are each verified alone: a broken journal fails only the reads of its effects', async () => {
        const { x, y, z } = await journal()
        const [a, b] = [effect('t2', 1), effect('t2', 2)]
        await drive(store, a, 'DISPATCHED')
        await drive(store, b, 'AUTHORIZED')
        await h.exec(`UPDATE journal_records SET data = $1 WHERE journal = 't1' AND seq = 5`, ['{"tampered":true}'])
        const reads = [x, y, z, a, b, a, effect('t3', 1)].map((e) => store.history(e.id).then((r) => r.map((rec) => rec.state), (e: unknown) => e))
        const [hx, hy, hz, ha, hb, ha2, none] = await Promise.all(reads)
        expect(hx).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED'])
        expect(hy).toBeInstanceOf(IntegrityError)
        expect(hz).toEqual(['PROPOSED', 'AUTHORIZED'])
        expect(ha).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED'])
        expect(ha2).toEqual(ha)
        expect(hb).toEqual(['PROPOSED', 'AUTHORIZED'])
        expect(none).toEqual([])
      })

      it('detects reordered records', async () => {
        const { y } = await journal()
        await h.exec(`UPDATE journal_records SET seq = -1 WHERE journal = 't1' AND seq = 4`)
        await h.exec(`UPDATE journal_records SET seq = 4 WHERE journal = 't1' AND seq = 3`)
        await h.exec(`UPDATE journal_records SET seq = 3 WHERE journal = 't1' AND seq = -1`)
        await expectIntegrity(store.scanInFlight(), 3)
        await expectIntegrity(store.history(y.id), 3)
      })

      it('detects an inserted record, even one hashed onto its predecessor', async () => {
        const { z } = await journal()
        const records = await allRecords(store)
        // Make room at seq 4, then forge a record that chains onto record 3.
        await h.exec(`UPDATE journal_records SET seq = -(seq + 1) WHERE journal = 't1' AND seq >= 4`)
        await h.exec(`UPDATE journal_records SET seq = -seq WHERE journal = 't1' AND seq < 0`)
        const forged = { journal: 't1', seq: 4, effectId: z.id, state: 'REJECTED' as const, at: records[2]!.at, data: {}, prevHash: records[2]!.hash }
        await h.exec(
          `INSERT INTO journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [forged.journal, forged.seq, forged.effectId, forged.state, forged.at, '{}', forged.prevHash, recordHash(forged)],
        )
        await expectIntegrity(store.scanInFlight(), 4)
        await expectIntegrity(store.history(z.id), 4)
      })

      it('detects a record moved out of the numbering (seq 0 or below)', async () => {
        const { x } = await journal()
        await h.exec(`UPDATE journal_records SET seq = 0 WHERE journal = 't1' AND seq = 1`)
        await expectIntegrity(store.scanInFlight(), 0)
        const err = await store.history(x.id).catch((e: unknown) => e)
        expect(err).toBeInstanceOf(IntegrityError)
      })

      /** t1: records 1-4 a (COMMITTED), 5-7 x (DISPATCHED), 8-11 b (COMMITTED): one effect in flight between settled ones. */
      async function between() {
        const [a, x, b] = [effect('t1', 'a'), effect('t1', 'x'), effect('t1', 'b')]
        await drive(store, a, 'COMMITTED')
        await drive(store, x, 'DISPATCHED')
        await drive(store, b, 'COMMITTED')
        return { a, x, b, records: await allRecords(store) }
      }

      /** Rewrites record `seq` of t1 with new data and its own hash recomputed, leaving its neighbours as they were. */
      async function rehash(records: JournalRecord[], seq: number, data: string) {
        const r = records.find((x) => x.seq === seq)!
        await h.exec(`UPDATE journal_records SET data = $1, hash = $2 WHERE journal = 't1' AND seq = $3`, [data, recordHash({ ...r, data }), seq])
      }

      it('in-flight records altered with their own hash recomputed: the record after them no longer links to them', async () => {
        const { records } = await between()
        await rehash(records, 7, '{"step":"DISPATCHED","forged":true}')
        await expectIntegrity(store.scanInFlight(), 8)
      })

      it('a settled record removed right before an in-flight one: the in-flight record follows a gap', async () => {
        await between()
        await h.exec(`DELETE FROM journal_records WHERE journal = 't1' AND seq = 4`)
        await expectIntegrity(store.scanInFlight(), 5)
      })

      it('a settled record removed right after an in-flight one: the in-flight record is followed by nothing', async () => {
        await between()
        await h.exec(`DELETE FROM journal_records WHERE journal = 't1' AND seq = 8`)
        await expectIntegrity(store.scanInFlight(), 8)
      })

      it("a journal's head altered, or a record written past it: its end is checked though its settled records are not read", async () => {
        const { records, b } = await between()
        await h.exec(`UPDATE journals SET head_hash = $1 WHERE journal = 't1'`, ['e'.repeat(64)])
        await expectIntegrity(store.scanInFlight(), 11)
        await h.exec(`UPDATE journals SET head_hash = $1 WHERE journal = 't1'`, [records.at(-1)!.hash])
        expect((await store.scanInFlight()).recordsRead).toBe(3)
        const past = { journal: 't1', seq: 12, effectId: b.id, state: 'COMMITTED' as const, at: records.at(-1)!.at, data: {}, prevHash: records.at(-1)!.hash }
        await h.exec(
          `INSERT INTO journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [past.journal, past.seq, past.effectId, past.state, past.at, '{}', past.prevHash, recordHash(past)],
        )
        await expectIntegrity(store.scanInFlight(), 12)
      })

      it('a record of an in-flight effect moved into another journal is refused', async () => {
        await between()
        await drive(store, effect('t2', 'other'), 'COMMITTED')
        await h.exec(`UPDATE journal_records SET journal = 't2', seq = 5 WHERE journal = 't1' AND seq = 7`)
        const err = await store.scanInFlight().catch((e: unknown) => e)
        expect(err).toBeInstanceOf(IntegrityError)
        expect((err as IntegrityError).context).toMatchObject({ journal: 't2', seq: 5 })
      })

      it('detects an effects table that disagrees with the journal', async () => {
        await journal()
        await h.exec(`UPDATE effects SET state = 'DISPATCHED', last_seq = 5 WHERE last_seq = 5`)
        await expectIntegrity(store.scanInFlight(), 5)
      })
    })

    describe('several writers on one database', () => {
      it('two stores appending at once keep every chain whole and every effect consistent', async () => {
        const other = await open()
        const effects = Array.from({ length: 24 }, (_, i) => effect(`shared-${i % 3}`, i))
        await Promise.all(effects.map((e, i) => drive(i % 2 ? store : other, e, 'COMMITTED')))
        const records = await allRecords(store)
        expect(records).toHaveLength(24 * 4)
        const verifier = new ChainVerifier()
        for (const r of records) verifier.check(r)
        for (const e of effects) expect((await other.get(e.id))?.state).toBe('COMMITTED')
        expect(await store.scanInFlight()).toEqual({ effects: [], recordsRead: 0 })
      })

      it('two stores racing on the same effects: exactly one wins each step', async () => {
        const other = await open()
        const effects = Array.from({ length: 10 }, (_, i) => effect('race', i))
        const proposals = await Promise.all(effects.flatMap((e) => [store.append([propose(e)]), other.append([propose(e)])]))
        expect(proposals.filter(([r]) => r!.ok)).toHaveLength(10)
        const moves = await Promise.all(
          effects.flatMap((e) => [store.append([move(e, 'PROPOSED', 'AUTHORIZED')]), other.append([move(e, 'PROPOSED', 'REJECTED')])]),
        )
        expect(moves.filter(([r]) => r!.ok)).toHaveLength(10)
        const records = await allRecords(store)
        expect(records).toHaveLength(20)
        const verifier = new ChainVerifier()
        for (const r of records) verifier.check(r)
        await store.scanInFlight()
      })
    })

    it('refuses work after close', async () => {
      const s = await h.open()
      await s.close()
      await expect(s.append([propose(effect('t1', 1))])).rejects.toThrow(/closed/)
    })
  })
}
