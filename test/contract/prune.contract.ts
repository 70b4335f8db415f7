/**
 * The prune half of the store contract (`outbox prune`'s deletions under a
 * checkpoint, and reading a pruned journal): run against every Store
 * implementation beside store.contract.ts. What the checkpoint's signature
 * means is verify's business (test/integration/outbox/prune.test.ts); here
 * the store keeps the document, cuts only what it was asked to and may, and
 * its own chain checks go on from the cut.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { IntegrityError } from '../../src/core/errors.js'
import type { Effect } from '../../src/core/effect.js'
import type { JournalCut, JournalRecord, Store, StoredCheckpoint } from '../../src/core/stores/store.js'
import { allRecords, drive, effect, move, ok, propose, tickingClock } from './fixtures.js'
import type { StoreHarness } from './store.contract.js'

const checkpoint = (n: number): StoredCheckpoint => ({ digest: `${n}`.padStart(64, 'c'), madeAt: new Date(Date.UTC(2030, 1, n)).toISOString(), document: { n, any: ['json'] } })

export function pruneContract(name: string, makeHarness: () => Promise<StoreHarness>): void {
  describe(`Prune contract: ${name}`, () => {
    let h: StoreHarness
    let store: Store
    beforeEach(async () => {
      h = await makeHarness()
      store = await h.open({ clock: tickingClock() })
    })
    afterEach(async () => {
      await store.close()
      await h.dispose()
    })

    /** Journal "t": two settled effects, then one in flight whose records interleave nothing. */
    async function journal(): Promise<{ done: Effect[]; open: Effect; records: JournalRecord[] }> {
      const done = [effect('t', 1), effect('t', 2)]
      await drive(store, done[0]!, 'COMMITTED')
      await drive(store, done[1]!, 'REJECTED')
      const open = effect('t', 3)
      await drive(store, open, 'DISPATCHED')
      await drive(store, effect('u', 4), 'COMMITTED')
      return { done, open, records: (await allRecords(store)).filter((r) => r.journal === 't') }
    }
    const cutAfter = (records: JournalRecord[], seq: number, ids: string[]): JournalCut => ({ journal: 't', seq, hash: records[seq - 1]!.hash, effectIds: ids })

    it('stores the checkpoint, deletes the records up to the cut and the effects listed, and reads on from the cut', async () => {
      const { done, open, records } = await journal()
      // COMMITTED: 4 records, REJECTED: 2.
      const cut = cutAfter(records, 6, done.map((e) => e.id))
      expect(await store.prune({ checkpoint: checkpoint(1), cuts: [cut] })).toEqual({ journals: 1, records: 6, effects: 2 })
      expect(await store.checkpoints()).toEqual([checkpoint(1)])
      const left = (await allRecords(store)).filter((r) => r.journal === 't')
      expect(left.map((r) => r.seq)).toEqual([7, 8, 9])
      expect(left[0]!.prevHash).toBe(cut.hash)
      for (const e of done) expect(await store.get(e.id)).toBeUndefined()
      expect((await store.list()).map((s) => s.effect.id).sort()).toEqual([open.id, effect('u', 4).id].sort())
      expect(await store.countByState()).toMatchObject({ COMMITTED: 1, REJECTED: 0, DISPATCHED: 1 })
      // Its history links to the cut; recovery's scan verifies the journal from it; the journal goes on.
      expect((await store.history(open.id)).map((r) => r.seq)).toEqual([7, 8, 9])
      expect((await store.scanInFlight()).effects.map((s) => [s.effect.id, s.state])).toEqual([[open.id, 'DISPATCHED']])
      const next = ok((await store.append([move(open, 'DISPATCHED', 'COMMITTED', { receipt: 'r' })]))[0])
      expect(next).toMatchObject({ journal: 't', seq: 10 })
      const later = effect('t', 5)
      expect(ok((await store.append([propose(later)]))[0])).toMatchObject({ seq: 11 })
      // Another journal is untouched.
      expect((await allRecords(store)).filter((r) => r.journal === 'u')).toHaveLength(4)
    })

    it('with no cuts, stores the checkpoint alone (`outbox checkpoint`): nothing deleted, the journal read as before', async () => {
      const { open } = await journal()
      const before = await allRecords(store)
      expect(await store.prune({ checkpoint: checkpoint(1), cuts: [] })).toEqual({ journals: 0, records: 0, effects: 0 })
      expect(await store.checkpoints()).toEqual([checkpoint(1)])
      expect(await allRecords(store)).toEqual(before)
      expect((await store.history(open.id)).map((r) => r.seq)).toEqual([7, 8, 9])
    })

    it('a cut made already is skipped; a further cut of the same journal goes on from the first', async () => {
      const { done, open, records } = await journal()
      await store.prune({ checkpoint: checkpoint(1), cuts: [cutAfter(records, 4, [done[0]!.id])] })
      expect(await store.prune({ checkpoint: checkpoint(1), cuts: [cutAfter(records, 4, [done[0]!.id])] })).toEqual({ journals: 0, records: 0, effects: 0 })
      expect(await store.prune({ checkpoint: checkpoint(2), cuts: [cutAfter(records, 6, [done[1]!.id])] })).toEqual({ journals: 1, records: 2, effects: 1 })
      expect((await store.checkpoints()).map((c) => c.digest)).toEqual([checkpoint(1).digest, checkpoint(2).digest])
      expect((await store.history(open.id)).map((r) => r.seq)).toEqual([7, 8, 9])
      expect((await store.scanInFlight()).effects).toHaveLength(1)
    })

    it('refuses, deleting nothing of that journal: a cut whose record has another hash, one holding a record of an effect not listed, one listing an open effect', async () => {
      const { done, open, records } = await journal()
      const before = await allRecords(store)
      for (const [cut, why] of [
        [{ ...cutAfter(records, 6, done.map((e) => e.id)), hash: 'f'.repeat(64) }, /record 6 is not the one the checkpoint pins/],
        [cutAfter(records, 6, [done[0]!.id]), new RegExp(`a record of effect ${done[1]!.id}, which is not among those pruned`)],
        [cutAfter(records, 9, [...done.map((e) => e.id), open.id]), new RegExp(`lists effect ${open.id} to prune, which is not settled`)],
        [{ ...cutAfter(records, 6, done.map((e) => e.id)), seq: 99 }, /has no record 99/],
      ] as const) {
        const err = await store.prune({ checkpoint: checkpoint(3), cuts: [cut] }).catch((e: unknown) => e)
        expect(err).toBeInstanceOf(IntegrityError)
        expect((err as Error).message).toMatch(why)
      }
      expect(await allRecords(store)).toEqual(before)
      for (const e of [...done, open]) expect(await store.get(e.id)).toBeDefined()
    })

    it('a record of the pruned journal altered behind the store is still found by the chain checks', async () => {
      const { done, open, records } = await journal()
      await store.prune({ checkpoint: checkpoint(1), cuts: [cutAfter(records, 6, done.map((e) => e.id))] })
      await h.exec(`UPDATE journal_records SET prev_hash = $1 WHERE journal = 't' AND seq = 7`, ['e'.repeat(64)])
      await expect(store.history(open.id)).rejects.toBeInstanceOf(IntegrityError)
      await expect(store.scanInFlight()).rejects.toBeInstanceOf(IntegrityError)
    })
  })
}
