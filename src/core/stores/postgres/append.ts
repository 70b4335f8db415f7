/**
 * One batch of appends in one round trip: the schema's append() function
 * (schemas/postgres/0001_baseline.sql, append(); a batch of one goes to append_step(),
 * append-step.ts, and a batch that is one chain of one effect to append_chain(),
 * append-chain.ts) locks the effects and journal heads, checks compare-and-set
 * and fencing, chains and writes the records, and notifies, as one autocommit
 * statement. This side only computes what depends on the
 * requests alone (the canonical data text, the effect's JSON, the channel a
 * record wakes) and maps the answer back to the port's results.
 *
 * Chained requests (Store.append: a chain is all or nothing) go through a
 * statement that checks the function's answer and fails when a chain came
 * out partly written (its first request lost a race: rare), so nothing of the
 * batch is written; the batch is then sent again without that chain, which
 * is answered as lost, with its effect as it stands.
 */
import type pg from 'pg'
import { requestTexts } from '../append-plan.js'
import { GENESIS_HASH, type AppendRequest, type AppendResult } from '../store.js'
import { appendChain, isOneChain } from './append-chain.js'
import { appendStep } from './append-step.js'
import { assertAnsweredInOrder, writtenRecord, type BatchAnswerRow } from './batch-answer.js'
import { notifyChannels } from './notify.js'
import { toSnapshot, type EffectRow } from './rows.js'
import { CHAIN_BROKEN, type PgStatements } from './statements.js'

/** A lost compare-and-set or fencing check answers the effect as it stands (null columns: no such effect). */
interface AppendRow extends BatchAnswerRow {
  effect: EffectRow['effect'] | null
  tier: number | null
  state: string | null
  last_seq: string | null
  detail: EffectRow['detail'] | null
  created_at: Date | null
  updated_at: Date | null
}

export async function appendBatch(
  client: pg.ClientBase,
  sql: PgStatements,
  requests: readonly AppendRequest[],
  at: string,
  schema: string,
): Promise<AppendResult[]> {
  if (requests.length === 1) return [await appendStep(client, sql, requests[0]!, at, schema)]
  if (isOneChain(requests)) return appendChain(client, sql, requests, at, schema)
  if (!requests.some((r) => r.chained)) return sendBatch(client, sql, requests, at, schema, false)
  try {
    return await sendBatch(client, sql, requests, at, schema, true)
  } catch (e) {
    const broken = brokenChain(e, requests)
    if (!broken) throw e
    // Nothing was written. The chain lost its first request's race: send the rest again, answer the chain as lost.
    const rest = requests.filter((_, i) => i < broken.from || i >= broken.to)
    const answered = rest.length > 0 ? await appendBatch(client, sql, rest, at, schema) : []
    const row = (await client.query<EffectRow>(sql.effect, [requests[broken.from]!.effectId])).rows[0]
    const lost: AppendResult = { ok: false, current: row ? toSnapshot(row) : null }
    return [...answered.slice(0, broken.from), ...requests.slice(broken.from, broken.to).map(() => structuredClone(lost)), ...answered.slice(broken.from)]
  }
}

/** The chain appendChained's guard named, as [from, to) request indexes; undefined for any other error. */
function brokenChain(e: unknown, requests: readonly AppendRequest[]): { from: number; to: number } | undefined {
  const message = e instanceof Error ? e.message : ''
  const at = message.indexOf(CHAIN_BROKEN)
  if ((e as { code?: unknown }).code !== '22P02' || at < 0) return undefined
  const idx = Number.parseInt(message.slice(at + CHAIN_BROKEN.length + 1), 10) - 1
  if (!(idx >= 0 && idx < requests.length)) return undefined
  let from = idx
  while (from > 0 && requests[from]!.chained) from--
  let to = idx + 1
  while (to < requests.length && requests[to]!.chained) to++
  return { from, to }
}

async function sendBatch(
  client: pg.ClientBase,
  sql: PgStatements,
  requests: readonly AppendRequest[],
  at: string,
  schema: string,
  chained: boolean,
): Promise<AppendResult[]> {
  const texts = requests.map(requestTexts)
  const proposal = (r: AppendRequest) => (r.from === null ? r.effect! : undefined)
  // A named statement: each pooled connection parses it once, not on every append.
  const { rows } = await client.query<AppendRow>({
    name: chained ? 'interlock_append_chained' : 'interlock_append',
    text: chained ? sql.appendChained : sql.append,
    values: [
      requests.map((r) => r.effectId),
      requests.map((r) => r.from),
      requests.map((r) => r.to),
      texts.map((t) => t.dataText),
      requests.map((r) => proposal(r)?.thread ?? null),
      requests.map((r) => proposal(r)?.target ?? null),
      requests.map((r) => proposal(r)?.action ?? null),
      requests.map((r) => (r.from === null ? r.tier! : null)),
      texts.map((t) => t.effectText ?? null),
      requests.map((r) => r.lease?.relay ?? null),
      requests.map((r) => r.lease?.token ?? null),
      requests.map((r) => notifyChannels([r.to])[0] ?? null),
      at,
      GENESIS_HASH,
      schema,
      ...(chained ? [requests.map((r) => r.chained === true)] : []),
    ],
  })
  assertAnsweredInOrder('append', 'request', rows, requests.length)
  return rows.map((row, i): AppendResult => {
    const req = requests[i]!
    if (!row.ok) {
      return { ok: false, current: row.state === null ? null : toSnapshot({ ...row, id: req.effectId } as unknown as EffectRow) }
    }
    return { ok: true, record: writtenRecord(row, { effectId: req.effectId, state: req.to, at, data: texts[i]!.data }) }
  })
}

