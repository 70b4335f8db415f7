/**
 * Default values of interlock.toml, in one place so the schema descriptions,
 * the example file and the loader can be checked against each other.
 */
import { resolve } from 'node:path'
import type { InterlockConfig } from './types.js'

export const DEFAULTS = {
  sqlitePath: './interlock.db',
  postgresSchema: 'interlock',
  postgresAccess: 'full' as const,
  maxAttempts: 5,
  backoffMs: 200,
  maxWaitMs: 30_000,
  repoBranch: 'main',
  repoAuthor: 'Interlock <interlock@localhost>',
  httpMethod: 'POST',
  timeoutMs: 10_000,
  connectTimeoutMs: 3_000,
  stripeBaseUrl: 'https://api.stripe.com',
  sendgridBaseUrl: 'https://api.sendgrid.com',
  slackBaseUrl: 'https://slack.com',
  githubBaseUrl: 'https://api.github.com',
  githubMergeMethod: 'merge',
  s3PathStyle: false,
  effectIdColumn: 'effect_id',
  statementTimeoutMs: 5_000,
  policyQuorum: 1,
  releaseTtl: '1h',
  reconcileOlderThan: '5m',
  reconcileOlderThanMs: 300_000,
  reconcileConcurrency: 4,
  notaryListen: '127.0.0.1:7311',
  notaryPath: 'interlock-notary.db',
  notarySchema: 'interlock_notary',
  relayConcurrency: 32,
  relayLeaseMs: 30_000,
  relayPollMs: 1_000,
  relayLogFormat: 'text' as const,
  relayStallMs: 20_000,
  relayHeartbeatRetention: '7d',
  relayHeartbeatRetentionMs: 7 * 86_400_000,
  storeStatementTimeoutMs: 15_000,
  storeLockTimeoutMs: 5_000,
  storeIdleInTransactionTimeoutMs: 10_000,
  mcpTimeoutMs: 60_000,
  mcpConnectTimeoutMs: 10_000,
  mcpMaxResultBytes: 65_536,
  mcpDedupe: 'window',
  mcpDedupeWindow: '10m',
  mcpThread: 'per-session',
} as const

/** The embedded default used when no interlock.toml exists: SQLite in `dir`, no targets. */
export function defaultConfig(dir: string): InterlockConfig {
  return {
    store: { kind: 'sqlite', path: resolve(dir, DEFAULTS.sqlitePath) },
    gate: { maxAttempts: DEFAULTS.maxAttempts, backoffMs: DEFAULTS.backoffMs, maxWaitMs: DEFAULTS.maxWaitMs },
    targets: {},
    operators: [],
    policy: { rules: [] },
    notify: [],
    reconcile: { olderThanMs: DEFAULTS.reconcileOlderThanMs, concurrency: DEFAULTS.reconcileConcurrency },
    secrets: [],
  }
}
