/**
 * One append request in one round trip: the schema's append_step() function
 * (schemas/postgres/0001_baseline.sql, append_step()), which answers a written record as
 * one text value ('<seq> <prev_hash> <hash> <journal>') and a lost
 * compare-and-set or fencing check as NULL. A sequential caller pays every
 * append's fixed cost in turn, four times per effect; a text answer costs
 * the server no result set and the client no row description.
 *
 * On a loss (a race: rare) the effect is read as it stands now, on the same
 * connection: `current` is what another writer left there, as the port says.
 */
import type pg from 'pg'
import { StoreError } from '../../errors.js'
import { requestTexts } from '../append-plan.js'
import { GENESIS_HASH, type AppendRequest, type AppendResult } from '../store.js'
import { notifyChannels } from './notify.js'
import { toSnapshot, type EffectRow } from './rows.js'
import type { PgStatements } from './statements.js'

const HASH_HEX = 64

/** @param notify whether the step notifies its record's channel at its commit (a batch notifies after its own: append.ts) */
export async function appendStep(client: pg.ClientBase, sql: PgStatements, r: AppendRequest, at: string, schema: string, notify = true): Promise<AppendResult> {
  const { data, dataText, effectText } = requestTexts(r)
  const p = r.from === null ? r.effect! : undefined
  // A named statement: each pooled connection parses it once, not on every append.
  const { rows } = await client.query<{ r: string | null }>({
    name: 'interlock_append_step',
    text: sql.appendStep,
    values: [
      r.effectId,
      r.from,
      r.to,
      dataText,
      p?.thread ?? null,
      p?.target ?? null,
      p?.action ?? null,
      p ? r.tier! : null,
      effectText ?? null,
      r.lease?.relay ?? null,
      r.lease?.token ?? null,
      notify ? (notifyChannels([r.to])[0] ?? null) : null,
      at,
      GENESIS_HASH,
      schema,
    ],
  })
  const answer = rows[0]?.r
  if (answer === undefined) throw new StoreError('the append_step function answered no row')
  if (answer === null) {
    const current = (await client.query<EffectRow>(sql.effect, [r.effectId])).rows[0]
    return { ok: false, current: current ? toSnapshot(current) : null }
  }
  const space = answer.indexOf(' ')
  const prevAt = space + 1
  const hashAt = prevAt + HASH_HEX + 1
  const journalAt = hashAt + HASH_HEX + 1
  if (space <= 0 || answer[hashAt - 1] !== ' ' || answer[journalAt - 1] !== ' ') {
    throw new StoreError(`the append_step function answered ${JSON.stringify(answer.slice(0, 200))}, not '<seq> <prev_hash> <hash> <journal>'`)
  }
  return {
    ok: true,
    record: {
      journal: answer.slice(journalAt),
      seq: Number(answer.slice(0, space)),
      effectId: r.effectId,
      state: r.to,
      at,
      data,
      prevHash: answer.slice(prevAt, prevAt + HASH_HEX),
      hash: answer.slice(hashAt, hashAt + HASH_HEX),
    },
  }
}
