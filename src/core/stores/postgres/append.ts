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
 * A batch holding chains (Store.append: a chain is all or nothing), as group
 * commit joins several callers', goes to append_chains()
 * (schemas/postgres/0004_append_chain.sql), which checks and writes each
 * chain whole, and each effect's row once.
 */
import type pg from 'pg'
import { requestTexts } from '../append-plan.js'
import { GENESIS_HASH, type AppendRequest, type AppendResult } from '../store.js'
import { appendChain, isOneChain } from './append-chain.js'
import { appendStep } from './append-step.js'
import { assertAnsweredInOrder, writtenRecord, type BatchAnswerRow } from './batch-answer.js'
import { notifyChannels } from './notify.js'
import { toSnapshot, type EffectRow } from './rows.js'
import type { PgStatements } from './statements.js'

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
  return sendBatch(client, sql, requests, at, schema, requests.some((r) => r.chained))
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
    name: chained ? 'interlock_append_chains' : 'interlock_append',
    text: chained ? sql.appendChains : sql.append,
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
      // append_chains() takes which request is chained to the one before it, before the scalars.
      ...(chained ? [requests.map((r) => r.chained === true)] : []),
      at,
      GENESIS_HASH,
      schema,
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

