/**
 * One batch of appends in one round trip, one autocommit statement: a batch
 * of one goes to the schema's append_step() (append-step.ts), a batch that is
 * one chain of one effect to append_chain() (append-chain.ts), a batch
 * holding chains, as group commit joins several callers' (a gate's, or a
 * relay's AUTHORIZED and DISPATCHED for every effect it claimed), to
 * append_chains(), and any other batch to append()
 * (schemas/postgres/0004_append_chain.sql, 0001_baseline.sql). They lock the
 * effects and journal heads, check compare-and-set and fencing, chain and
 * write the records, each chain whole or not at all and each effect's row
 * once, and notify. This side only computes what depends on the requests
 * alone (the canonical data text, the effect's JSON, the channel a record
 * wakes) and maps the answer back to the port's results.
 *
 * A record wakes the listeners of the state its chain leaves the effect in
 * (notify.ts): AUTHORIZED chained on to DISPATCHED in the same commit was
 * never ready for another relay, and wakes none.
 *
 * A batch of several effects notifies after its commit, in a statement of
 * its own (notifyCommitted), not inside it (one effect's append, a
 * sequential caller's, notifies at its commit): PostgreSQL serialises the
 * commits of every transaction that issued NOTIFY, WAL flush included, under
 * one lock for the whole cluster, so several relays notifying inside their
 * commits could not share a flush (measured: bench/relay/notify-lock.ts and
 * README.md there). A transaction that only notifies writes no WAL but its
 * commit record, which it does not wait to flush: it holds that lock
 * briefly. A notification lost between the two (the process dies) costs its
 * listeners a poll interval, as any missed notification does (notify.ts).
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

/** @param notify whether the records written notify their channels at the commit (one effect's) or not (a batch's: notifyCommitted after it) */
export async function appendBatch(
  client: pg.ClientBase,
  sql: PgStatements,
  requests: readonly AppendRequest[],
  at: string,
  schema: string,
  notify: boolean,
): Promise<AppendResult[]> {
  if (requests.length === 1) return [await appendStep(client, sql, requests[0]!, at, schema, notify)]
  if (isOneChain(requests)) return appendChain(client, sql, requests, at, schema, notify)
  return sendBatch(client, sql, requests, at, schema, requests.some((r) => r.chained), notify)
}

/** The channel each request's record wakes: only a chain's last request's, for the state the effect is left in. */
export function requestChannels(requests: readonly AppendRequest[]): (string | null)[] {
  return requests.map((r, i) => (requests[i + 1]?.chained ? null : (notifyChannels([r.to])[0] ?? null)))
}

/** The channels a committed batch wakes: those of its written requests, each once. */
export function committedChannels(requests: readonly AppendRequest[], results: readonly AppendResult[]): string[] {
  const channels = requestChannels(requests)
  return [...new Set(channels.filter((c, i): c is string => c !== null && results[i]?.ok === true))]
}

/** Notifies `channels` (the store's schema as payload) in a transaction that writes nothing else. */
export async function notifyCommitted(client: pg.ClientBase, channels: readonly string[], schema: string): Promise<void> {
  await client.query({ name: 'interlock_notify', text: 'SELECT pg_notify(c, $2) FROM unnest($1::text[]) AS c', values: [channels, schema] })
}

async function sendBatch(
  client: pg.ClientBase,
  sql: PgStatements,
  requests: readonly AppendRequest[],
  at: string,
  schema: string,
  chained: boolean,
  notify: boolean,
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
      notify ? requestChannels(requests) : requests.map(() => null),
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

