/**
 * The in-transaction form of the service side (docs/notary.md, "What the
 * service must do", 1): the service's database is PostgreSQL and holds the
 * notary's tables in a schema beside its own; `claim` and `performed` are
 * written, signed with the service's key, inside the transaction that makes
 * the service's change, so the change and the line commit together or not at
 * all. A crash before COMMIT leaves neither (the agent's recovery finds no
 * claim, aborts the attempt and sends the next one); after COMMIT, both.
 *
 * The claim takes the effect's advisory lock (postgres/pg-notary-store.ts)
 * and holds it to the end of the transaction, so an agent's abort of the same
 * attempt waits for the service's COMMIT or ROLLBACK and then loses, or wins
 * and the service's claim is refused.
 */
import type { JsonObject, JsonValue } from '../canonical-json.js'
import type { KeyPair } from '../crypto/keys.js'
import { InterlockError, ExitCode } from '../errors.js'
import { notaryLog, type NotaryLog, type WriteAnswer } from './log.js'
import { DEFAULT_NOTARY_SCHEMA, installNotarySchema, type Queryable } from './postgres/pg-notary-schema.js'
import { appendIn, lockEffect, readChain, readDecisions, readEffects } from './postgres/pg-notary-store.js'
import { signRecord, type NotaryKind } from './records.js'
import type { AttemptView } from './state.js'

export interface NotaryTransactionOptions {
  /** The service's name as [notary] services trusts it. */
  service: string
  /** The service's key (`interlock notary keygen`): its seed signs, its public key checks what is read back. */
  key: Pick<KeyPair, 'seed' | 'publicKey'>
  /** The schema of the notary's tables in the service's database (default "interlock_notary"). */
  schema?: string
  now?: () => Date
}

/** What the service answers for a request it does not perform (a recorded outcome, or a refusal). */
export interface RecordedAnswer {
  status: number
  body: JsonValue
  /** True when the answer is the result recorded for an attempt already performed or failed. */
  replayed: boolean
}

export type Claim =
  | {
      go: true
      /** Writes `performed` with the service's result, in the same transaction: call it before COMMIT. */
      performed(result: { status?: number; body?: JsonValue }): Promise<void>
      /** Writes `failed` (the service refused and changed nothing), in the same transaction. */
      failed(result: { status?: number; body?: JsonValue; reason: string }): Promise<void>
    }
  | { go: false; answer: RecordedAnswer }

export class NotaryTransactionError extends InterlockError {
  constructor(effect: string, attempt: number, kind: NotaryKind, answer: WriteAnswer) {
    super('E_NOTARY_WRITE', ExitCode.TARGET, `the notary's tables did not take ${kind} of attempt ${attempt} of effect ${effect}: ${answer.status}${answer.reason ? ` (${answer.reason})` : ''}`, {
      hint: 'Roll the transaction back: nothing of it may commit without its line. Check the service\'s name and key against [notary.services].',
      context: { effect, attempt, kind, status: answer.status },
    })
  }
}

/** Creates the notary's schema and tables in the service's database when missing (idempotent). */
export async function installNotaryTables(db: Queryable, schema = DEFAULT_NOTARY_SCHEMA): Promise<void> {
  await installNotarySchema(db, schema)
}

/**
 * Claims attempt `attempt` of `effect` in the transaction `db` has begun.
 * `go: true`: perform the change on `db`, then `performed(...)`, then COMMIT.
 * `go: false`: do not perform; roll back and answer `answer` (409 aborted,
 * the recorded result of a performed attempt, or its recorded refusal).
 */
export async function claimInTransaction(db: Queryable, opts: NotaryTransactionOptions, effect: string, attempt: number): Promise<Claim> {
  const log = logOn(db, opts)
  // Held to COMMIT: the head read below stays the head, and a racing abort waits.
  await lockEffect(db, effect)
  const claim = await write(log, opts, effect, attempt, 'claim', {})
  if (claim.status === 'decided') return { go: false, answer: recordedAnswer(claim.view!) }
  if (claim.status !== 'written') throw new NotaryTransactionError(effect, attempt, 'claim', claim)
  const outcome = async (kind: 'performed' | 'failed', body: JsonObject) => {
    const a = await write(log, opts, effect, attempt, kind, body)
    if (a.status !== 'written') throw new NotaryTransactionError(effect, attempt, kind, a)
  }
  return {
    go: true,
    performed: (r) => outcome('performed', { status: r.status ?? 200, body: r.body ?? null, contentType: 'application/json' }),
    failed: (r) => outcome('failed', { status: r.status ?? 422, body: r.body ?? null, contentType: 'application/json', reason: r.reason }),
  }
}

/**
 * The whole form on one client of the service's own (a pool's checked-out
 * client, not the pool): BEGIN, claim, `work` (the service's change, on the
 * same client), performed, COMMIT. Anything thrown rolls it all back, the
 * claim included, and is rethrown: nothing was done, and the agent's
 * recovery will abort the attempt and send the next one.
 */
export async function performInTransaction(
  db: Queryable,
  opts: NotaryTransactionOptions,
  request: { effect: string; attempt: number },
  work: (db: Queryable) => Promise<{ status?: number; body?: JsonValue }>,
): Promise<RecordedAnswer> {
  await db.query('BEGIN')
  try {
    const claim = await claimInTransaction(db, opts, request.effect, request.attempt)
    if (!claim.go) {
      await db.query('ROLLBACK')
      return claim.answer
    }
    const result = await work(db)
    await claim.performed(result)
    await db.query('COMMIT')
    return { status: result.status ?? 200, body: result.body ?? null, replayed: false }
  } catch (err) {
    await db.query('ROLLBACK').catch(() => undefined)
    throw err
  }
}

function logOn(db: Queryable, opts: NotaryTransactionOptions): NotaryLog {
  const schema = opts.schema ?? DEFAULT_NOTARY_SCHEMA
  // Only this service is trusted here: the log's own checks (signature, state, chain) run on what it writes.
  return notaryLog(
    {
      chain: (effect) => readChain(db, schema, effect),
      append: (r) => appendIn(db, schema, r),
      effects: () => readEffects(db, schema),
      decisions: (effect) => readDecisions(db, schema, effect),
      close: async () => undefined,
    },
    { agents: {}, services: { [opts.service]: opts.key.publicKey } },
  )
}

async function write(log: NotaryLog, opts: NotaryTransactionOptions, effect: string, attempt: number, kind: NotaryKind, body: JsonObject): Promise<WriteAnswer> {
  const { head } = await log.effect(effect)
  const at = (opts.now ?? (() => new Date()))().toISOString()
  return log.write(signRecord({ effect, attempt, kind, writer: opts.service, at, body, prev: head }, opts.key))
}

function recordedAnswer(view: AttemptView): RecordedAnswer {
  if (view.state === 'ABORTED') {
    return { status: 409, body: { error: 'aborted', message: `attempt ${view.attempt} of effect ${view.effect} was aborted by the agent` }, replayed: false }
  }
  const outcome = view.records.find((r) => r.kind === 'performed' || r.kind === 'failed')
  if (!outcome) {
    // Only a claim made outside this form (the middleware's) leaves CLAIMED without an outcome.
    return { status: 503, body: { error: 'claimed', message: `attempt ${view.attempt} was claimed and has no recorded outcome; it is not performed again` }, replayed: false }
  }
  const b = outcome.body as { status?: number; body?: JsonValue }
  return { status: b.status ?? 200, body: b.body ?? null, replayed: true }
}
