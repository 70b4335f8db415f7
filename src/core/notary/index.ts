/**
 * `agent-interlock/notary`: both sides of the notary (docs/notary.md).
 * Services: notaryMiddleware / withNotary (node:http, Express), notaryPlugin
 * (Fastify, an optional peer: nothing here imports it), or performInTransaction /
 * claimInTransaction on the service's own PostgreSQL transaction. Agents: notarized(target).
 */
export { notaryMiddleware, withNotary, type Middleware, type NotaryMiddlewareOptions } from './middleware.js'
export { notaryPlugin, type NotaryPluginOptions, type FastifyInstanceLike, type FastifyReplyLike, type FastifyRequestLike } from './fastify.js'
export { notarized, type NotarizedOptions } from './notarized.js'
export { notaryClient, NotaryUnreachable, type NotaryClient, type NotaryClientOptions } from './client.js'
export { notaryLog, type NotaryLog, type TrustedKeys, type WriteAnswer, type WriteStatus, type EffectView } from './log.js'
export { startNotaryServer, type NotaryServer } from './server.js'
export { serveNotary, type RunningNotary } from './serve.js'
export { openSqliteNotaryStore } from './sqlite/sqlite-notary-store.js'
export type { NotaryStore, AppendResult } from './store.js'
export { signRecord, verifyRecord, recordHash, GENESIS, type NotaryKind, type SignedRecord, type StoredRecord } from './records.js'
export type { AttemptState, AttemptView } from './state.js'
export { EFFECT_HEADER, ATTEMPT_HEADER, REPLAYED_HEADER } from './headers.js'
export { openPostgresNotaryStore, type PostgresNotaryStoreOptions } from './postgres/pg-notary-store.js'
export {
  claimInTransaction,
  performInTransaction,
  installNotaryTables,
  NotaryTransactionError,
  type Claim,
  type NotaryTransactionOptions,
  type RecordedAnswer,
} from './in-transaction.js'
export type { Queryable } from './postgres/pg-notary-schema.js'
