/**
 * The store port: a durable, hash-chained journal of effect state changes.
 *
 * Every implementation (sqlite/, postgres/) passes the one contract suite in
 * test/contract/store.contract.ts. The core never sees a driver type.
 *
 * Journals: each effect belongs to the journal named by its thread. Records of
 * one journal are numbered 1, 2, 3... and each carries the hash of the record
 * before it (`prevHash`, GENESIS_HASH for the first), so a journal can be
 * verified offline and a removed, altered, reordered or inserted record shows.
 */
import type { JsonObject } from '../canonical-json.js'
import type { Effect, EffectSnapshot, Tier } from '../effect.js'
import type { State } from '../lifecycle.js'
import type { Sealer, StoredSeal } from '../crypto/seal.js'

export const GENESIS_HASH = '0'.repeat(64)

/**
 * Where journal reads start: below any seq, so a record whose seq was set to
 * 0 or below behind the store's back is read (and refused), not skipped.
 */
export const BEFORE_ANY_SEQ = Number.MIN_SAFE_INTEGER

export interface JournalRecord {
  journal: string
  seq: number
  effectId: string
  state: State
  /** ISO-8601 UTC timestamp from the injected clock. */
  at: string
  /**
   * PROPOSED: { effect, tier }; COMMITTED: { receipt }; REJECTED: { violations };
   * FAILED / AMBIGUOUS: { reason }; HELD: { rule }... Free-form otherwise.
   */
  data: JsonObject
  prevHash: string
  hash: string
}

/** One state change to make durable. */
export interface AppendRequest {
  effectId: string
  /** The state the writer believes the effect is in; null to create it (PROPOSED). */
  from: State | null
  to: State
  data: JsonObject
  /** Required when `from` is null: the effect being proposed and its target's tier. */
  effect?: Effect
  tier?: Tier
  /**
   * The data of the effect's last record as the writer read it (its
   * snapshot's detail): what a record signature binds the new record to
   * (stores/signing-store.ts). Not needed for a chained request, whose
   * predecessor is the request before it. Stores do not read it.
   */
  after?: JsonObject
  /**
   * Applied only together with the request just before it in the same call:
   * the next state of the same effect, `from` the state that request writes.
   * A chain (a request and those chained to it) is all or nothing: when its
   * first request loses (compare-and-set, fencing), every request chained to
   * it loses too, with the same `current`, and nothing of it is written. So
   * states between which nothing leaves the process (PROPOSED, AUTHORIZED,
   * DISPATCHED) are one durable commit, each still its own record.
   */
  chained?: boolean
  /**
   * The writer's sealer (crypto/seal.ts): inside the append's transaction,
   * after the records are numbered and hashed, the store asks it for one seal
   * over every record of this append it wrote with this sealer, and stores it
   * in the same transaction (an agent's store, which only proposes, ignores it).
   */
  sealer?: Sealer
  /**
   * A relay's fencing: the write happens only if the effect's lease is still
   * exactly this one (same relay, same token), checked inside the append's
   * transaction. A relay that lost its lease gets `{ ok: false }`.
   */
  lease?: Lease
}

/** A relay's hold on one effect: who, and the fencing token of that claim. */
export interface Lease {
  relay: string
  /** Drawn from one counter per store: every claim gets a number no earlier claim had. */
  token: number
}

export interface ClaimRequest {
  relay: string
  /** Most effects to take. */
  limit: number
  /** How long the lease lasts unless renewed. */
  leaseMs: number
  /** Only effects of these targets (the ones this relay can dispatch). */
  targets?: readonly string[]
  /**
   * States to take, default READY_STATES. A DISPATCHED effect is only taken
   * when no lease on it is live (its relay died or stalled); PROPOSED and
   * AUTHORIZED likewise.
   */
  states?: readonly State[]
  /**
   * Only effects created at or after this ISO time. A relay draining a long
   * backlog passes where its last claim started, so the scan does not walk
   * the settled effects before it; it claims without it now and then to pick
   * up older effects whose lease ran out.
   */
  createdFrom?: string
  /**
   * Only these effects (reconcile-effects leases just what it will act on),
   * each still only when its lease is free or expired and it is in `states`.
   */
  ids?: readonly string[]
}

export interface ClaimedEffect {
  snapshot: EffectSnapshot
  lease: Lease
  /** ISO-8601 expiry, in the store's time. */
  expiresAt: string
}

export interface LeaseRef {
  effectId: string
  token: number
}

export interface RelayHeartbeat {
  relay: string
  info: JsonObject
  startedAt: string
  lastSeen: string
  /** Milliseconds since lastSeen by the store's own clock, so a reader's clock skew cannot make a live relay look gone. */
  ageMs: number
}

/** States a relay works on without an operator. */
export const READY_STATES: readonly State[] = ['PROPOSED', 'AUTHORIZED', 'DISPATCHED']

/** What a store can tell listeners (PostgreSQL LISTEN/NOTIFY; SQLite has none: callers poll). */
export type StoreEvent = 'ready' | 'settled'

export type AppendResult =
  | { ok: true; record: JournalRecord }
  /**
   * The effect was not in `from` (another writer moved it, or it already
   * exists when proposing): nothing was written; `current` is what is there.
   */
  | { ok: false; current: EffectSnapshot | null }

export interface InFlightScan {
  /** Every effect not in a terminal state (PROPOSED, HELD, AUTHORIZED, DISPATCHED, AMBIGUOUS). */
  effects: EffectSnapshot[]
  /** Journal records read (and verified) to produce this: the in-flight effects' own records. */
  recordsRead: number
  /**
   * Those records, per effect, oldest first, as history() would return them
   * (verified in the same read as the snapshots): recovery's checks of an
   * effect's journal use them instead of reading it again.
   */
  histories?: ReadonlyMap<string, JournalRecord[]>
}

export interface ListFilter {
  states?: State[]
  target?: string
  thread?: string
  /** ISO-8601: only effects created at or after this time. */
  since?: string
  /** ISO-8601: only effects created before this time. */
  until?: string
  limit?: number
  /** Skip this many matching effects first (paging, with `limit`). */
  offset?: number
  /** Only effects whose id starts with these lowercase hex characters (a prefix typed by an operator). */
  idPrefix?: string
  /** Only effects proposed for this principal (effect.principal). */
  principal?: string
  /** Only effects with this key (effect.key): the MCP gateway's check that a caller key names one call. */
  key?: string
}

/**
 * Where the MCP gateway keeps what a caller read (integrations/mcp/reads.ts):
 * who, in which thread, through which target. A PostgreSQL store keeps it
 * apart per database role too, as it keeps effects.
 */
export interface ReadScope {
  principal: string
  thread: string
  target: string
}

/** A checkpoint as prune stored it: the signed document (outbox/checkpoint-file.ts), which verify judges. */
export interface StoredCheckpoint {
  /** sha256hex of the document's signed statement and signature: its key in the store. */
  digest: string
  madeAt: string
  document: JsonObject
}

/**
 * One journal cut by prune: its records up to and including `seq` go, and so
 * do the rows of `effectIds`, every effect whose records all lie there.
 */
export interface JournalCut {
  journal: string
  seq: number
  /** The hash of record `seq`, as the checkpoint pins it. */
  hash: string
  effectIds: readonly string[]
}

export interface PruneRequest {
  checkpoint: StoredCheckpoint
  cuts: readonly JournalCut[]
}

export interface PruneResult {
  journals: number
  records: number
  effects: number
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres'

  /**
   * Append a batch of state changes in one durable transaction (group commit).
   * Each request is checked on its own (compare-and-set on the effect's current
   * state, and the lifecycle table); a request that loses leaves the others
   * untouched. When the promise resolves, every ok record is durable.
   * Rejects (StoreUnavailableError) when durability cannot be confirmed; then
   * the caller must assume nothing was written and must not dispatch.
   *
   * Requests are applied in order, so a later request sees the earlier ones
   * (PROPOSED then AUTHORIZED of one effect in one call is fine); a request
   * `chained` to the one before it is written only if that one is.
   *
   * A request whose `from → to` is not in the lifecycle table (or a proposal
   * without `effect`/`tier`, or a chained request that does not continue the
   * request before it) is a caller's bug, not a race: the whole call
   * throws IllegalTransitionError (InputError for a missing effect) before
   * anything is written. Since compare-and-set requires the current state to
   * be `from`, checking `from → to` up front is the same as checking the
   * transition actually made. The group-commit decorator runs this check per
   * caller before batching, so one caller's bug never fails another's batch.
   */
  append(requests: AppendRequest[]): Promise<AppendResult[]>

  /**
   * What this store refuses whatever the journal holds (a PostgreSQL store
   * opened with agent access takes proposals only): throws before any I/O.
   * The group-commit decorator asks it per caller, like the lifecycle check,
   * so one caller's refused request never fails another's batch. Undefined
   * when the store takes every legal request.
   */
  checkAppend?(requests: readonly AppendRequest[]): void

  /** The effect's current state, or undefined. */
  get(effectId: string): Promise<EffectSnapshot | undefined>

  /** Every record of one effect, oldest first, each verified against its hash. */
  history(effectId: string): Promise<JournalRecord[]>

  /**
   * Recovery's one read: every non-terminal effect, rebuilt from its own
   * records, each verified against its hash and chained to its neighbours in
   * the journal, and each of their journals ending at its recorded head
   * (in-flight-check.ts). Reads what is in flight, not the history around it.
   */
  scanInFlight(): Promise<InFlightScan>

  /** Effects matching a filter, newest first. */
  list(filter?: ListFilter): Promise<EffectSnapshot[]>

  /**
   * How many effects are in each state, every state present (0 when none):
   * one grouped query over the effects table, so `outbox status` stays fast
   * on a million effects. Given `states`, only those are counted (the others
   * read 0): open states alone (`reconcile-effects`: AMBIGUOUS and HELD) are
   * counted from the few effects not settled, whatever the history.
   */
  countByState(states?: readonly State[]): Promise<Record<State, number>>

  /**
   * Every record of every journal in (journal, seq) order: for verify and
   * export. Not verified here: the caller verifies (ChainVerifier) and reports.
   * Of a journal in `after`, only the records past the seq given, the ones
   * before not read at all (`outbox checkpoint` reads each journal from its
   * last pin on).
   */
  records(after?: ReadonlyMap<string, number>): AsyncIterable<JournalRecord>

  /**
   * Takes up to `limit` ready effects whose lease is free or expired, oldest
   * first, giving each a new lease (new token). Two concurrent claims never
   * take the same effect (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: BEGIN
   * IMMEDIATE).
   */
  claim(request: ClaimRequest): Promise<ClaimedEffect[]>

  /** Extends the leases `relay` still holds; returns the effect ids whose lease it still holds. */
  renewLease(relay: string, leases: readonly LeaseRef[], leaseMs: number): Promise<string[]>

  /** Gives leases up (a draining relay's unstarted work), so others may claim at once. */
  releaseLease(relay: string, leases: readonly LeaseRef[]): Promise<void>

  /** The checkpoints prune has stored, oldest first: what `outbox verify` reads a pruned journal from. */
  checkpoints(): Promise<StoredCheckpoint[]>

  /**
   * The seals stored with the records (crypto/seal.ts), in the order
   * written; with `at`, only those of commits at these times (the records
   * of one effect name theirs by their own `at`).
   */
  seals(at?: readonly string[]): Promise<StoredSeal[]>

  /**
   * Takes what a checkpoint covers out of the store (`outbox prune`): stores
   * the checkpoint, then for each cut, in a transaction of its own, deletes
   * the journal's records up to it and its effects' rows, and records where
   * the journal now starts (its base: the last record removed), which reads
   * that verify a chain link its first record to. Refuses (IntegrityError),
   * changing nothing of that journal, a cut whose record is not there with
   * that hash, a record at or before the cut of an effect not listed, or a
   * listed effect that is not settled or has records past the cut. A cut at
   * or before the journal's base is done already: skipped. With no cuts, it
   * stores the checkpoint alone (`outbox checkpoint`, which removes nothing).
   */
  prune(request: PruneRequest): Promise<PruneResult>

  /**
   * Keeps, for premises, the digest of what one read answered a caller
   * (`read` names the read: a SHA-256 hex of its tool and arguments),
   * replacing what was kept of the same read in the same scope: a premise
   * then outlives the process that served the read.
   */
  rememberRead(scope: ReadScope, read: string, digest: string): Promise<void>

  /** What rememberRead kept of this read in this scope, if anything. */
  recallRead(scope: ReadScope, read: string): Promise<string | undefined>

  /** Records that `relay` is alive, with what it wants `outbox status` to show. */
  heartbeat(relay: string, info: JsonObject): Promise<void>

  /** Every relay that sent a heartbeat and was not forgotten since, most recently seen first. */
  relays(): Promise<RelayHeartbeat[]>

  /**
   * Deletes the rows of relays whose last heartbeat is older than
   * `olderThanMs` (store time): each restart under the default id leaves a
   * row behind. Returns how many went.
   */
  forgetRelays(olderThanMs: number): Promise<number>

  /**
   * Calls `listener` when effects become ready or settle somewhere (any
   * process). Undefined when the store cannot notify: callers poll.
   * Resolves to an unsubscribe function once listening.
   */
  subscribe?(event: StoreEvent, listener: () => void): Promise<() => Promise<void>>

  close(): Promise<void>
}
