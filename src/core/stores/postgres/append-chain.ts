/**
 * One chain of one effect in one round trip (Store.append's chain: a request
 * and those chained to it, all or nothing): the schema's append_chain()
 * function (schemas/postgres/0004_append_chain.sql), which writes every
 * state as its own hash-chained record and the effect's row once, at the
 * last state, in one statement. A gate's first commit for an effect no rule
 * holds is such a chain (PROPOSED, AUTHORIZED, DISPATCHED or REJECTED).
 *
 * It answers one text value, '<seq> <prev_hash> <hash 1> … <hash n> <journal>',
 * or NULL when the chain lost (compare-and-set or fencing): nothing was
 * written, and every request of the chain is answered with the effect as it
 * stands now, read on the same connection.
 */
import type pg from 'pg'
import { StoreError } from '../../errors.js'
import { requestTexts } from '../append-plan.js'
import { GENESIS_HASH, type AppendRequest, type AppendResult, type Lease } from '../store.js'
import { notifyChannels } from './notify.js'
import { toSnapshot, type EffectRow } from './rows.js'
import type { PgStatements } from './statements.js'

const HASH_HEX = 64

/**
 * True when the batch is exactly one chain append_chain() takes: a first
 * request and at least one chained to it (so all of one effect:
 * validateAppendRequests), every one under the same lease or none.
 */
export function isOneChain(requests: readonly AppendRequest[]): boolean {
  if (requests.length < 2 || requests[0]!.chained) return false
  const lease = requests[0]!.lease
  return requests.every((r, i) => (i === 0 || r.chained === true) && sameLease(r.lease, lease))
}

/** @param notify whether the chain notifies, at its commit, the channel of the state it leaves its effect in (append.ts) */
export async function appendChain(
  client: pg.ClientBase,
  sql: PgStatements,
  requests: readonly AppendRequest[],
  at: string,
  schema: string,
  notify = true,
): Promise<AppendResult[]> {
  const first = requests[0]!
  const texts = requests.map(requestTexts)
  const p = first.from === null ? first.effect! : undefined
  // A named statement: each pooled connection parses it once, not on every append.
  const { rows } = await client.query<{ r: string | null }>({
    name: 'interlock_append_chain',
    text: sql.appendChain,
    values: [
      first.effectId,
      first.from,
      requests.map((r) => r.to),
      texts.map((t) => t.dataText),
      p?.thread ?? null,
      p?.target ?? null,
      p?.action ?? null,
      p ? first.tier! : null,
      texts[0]!.effectText ?? null,
      first.lease?.relay ?? null,
      first.lease?.token ?? null,
      notify ? notifyChannels([requests.at(-1)!.to]) : [],
      at,
      GENESIS_HASH,
      schema,
    ],
  })
  const answer = rows[0]?.r
  if (answer === undefined) throw new StoreError('the append_chain function answered no row')
  if (answer === null) {
    const row = (await client.query<EffectRow>(sql.effect, [first.effectId])).rows[0]
    const current = row ? toSnapshot(row) : null
    return requests.map(() => ({ ok: false, current: current && structuredClone(current) }))
  }
  // '<seq> <prev_hash> <hash 1> … <hash n> <journal>': the hashes are 64 hex digits each; the journal, last, may hold spaces.
  const space = answer.indexOf(' ')
  const hashesAt = space + 1
  const journalAt = hashesAt + (HASH_HEX + 1) * (requests.length + 1)
  const seq = Number(answer.slice(0, space))
  if (space <= 0 || !Number.isSafeInteger(seq) || answer[journalAt - 1] !== ' ') {
    throw new StoreError(`the append_chain function answered ${JSON.stringify(answer.slice(0, 200))}, not '<seq> <prev_hash> <hash 1> … <hash ${requests.length}> <journal>'`)
  }
  const hash = (k: number) => answer.slice(hashesAt + (HASH_HEX + 1) * k, hashesAt + (HASH_HEX + 1) * k + HASH_HEX)
  const journal = answer.slice(journalAt)
  return requests.map((r, k) => ({
    ok: true,
    record: { journal, seq: seq + k, effectId: r.effectId, state: r.to, at, data: texts[k]!.data, prevHash: hash(k), hash: hash(k + 1) },
  }))
}

function sameLease(a: Lease | undefined, b: Lease | undefined): boolean {
  return a === b || (a !== undefined && b !== undefined && a.relay === b.relay && a.token === b.token)
}
