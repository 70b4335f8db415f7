/**
 * A validated, env-expanded document → the typed InterlockConfig: defaults
 * applied, snake_case → camelCase, relative paths resolved against the config
 * file's folder (so the file means the same thing from any working directory).
 *
 * The casts below are safe only because the document passed the schema
 * (STYLE habit 2: validate once, at the edge).
 */
import { isAbsolute, resolve } from 'node:path'
import type { Tier } from '../effect.js'
import { DEFAULTS } from './defaults.js'
import { normalizeHttpActions, normalizeHttpTemplates } from './normalize-http.js'
import { normalizeMcp, normalizeProxyHttp } from './normalize-mcp.js'
import { parseDuration } from './policy.js'
import type { ReconcileConfig } from './types.js'
import type { NotaryConfig, RelayConfig } from './types.js'
import type { GateConfig, HttpTargetConfig, PostgresRowTargetConfig, ServiceTargetConfig, StoreConfig, TargetConfig } from './types.js'
import type { GithubTargetConfig, ModuleTargetConfig, S3TargetConfig } from './types.js'

type Table = Record<string, unknown>

export function normalizeStore(raw: Table | undefined, dir: string): StoreConfig {
  if (raw?.kind === 'postgres') {
    const store: StoreConfig = {
      kind: 'postgres',
      url: raw.url as string,
      schema: (raw.schema as string | undefined) ?? DEFAULTS.postgresSchema,
      access: (raw.access as 'full' | 'agent' | undefined) ?? DEFAULTS.postgresAccess,
      statementTimeoutMs: (raw.statement_timeout_ms as number | undefined) ?? DEFAULTS.storeStatementTimeoutMs,
      lockTimeoutMs: (raw.lock_timeout_ms as number | undefined) ?? DEFAULTS.storeLockTimeoutMs,
      idleInTransactionTimeoutMs: (raw.idle_in_transaction_timeout_ms as number | undefined) ?? DEFAULTS.storeIdleInTransactionTimeoutMs,
    }
    if (raw.replication === 'async-accepted') store.replication = 'async-accepted'
    return store
  }
  return { kind: 'sqlite', path: resolvePath(dir, (raw?.path as string | undefined) ?? DEFAULTS.sqlitePath) }
}

export function normalizeGate(raw: Table | undefined): GateConfig {
  return {
    maxAttempts: (raw?.max_attempts as number | undefined) ?? DEFAULTS.maxAttempts,
    backoffMs: (raw?.backoff_ms as number | undefined) ?? DEFAULTS.backoffMs,
    maxWaitMs: (raw?.max_wait_ms as number | undefined) ?? DEFAULTS.maxWaitMs,
  }
}

export function normalizeReconcile(raw: Table | undefined): ReconcileConfig {
  return {
    olderThanMs: parseDuration((raw?.older_than as string | undefined) ?? DEFAULTS.reconcileOlderThan),
    concurrency: (raw?.concurrency as number | undefined) ?? DEFAULTS.reconcileConcurrency,
  }
}

export function normalizeRelay(raw: Table | undefined, dir: string): RelayConfig {
  const relay: RelayConfig = {
    concurrency: (raw?.concurrency as number | undefined) ?? DEFAULTS.relayConcurrency,
    leaseMs: (raw?.lease_ms as number | undefined) ?? DEFAULTS.relayLeaseMs,
    pollMs: (raw?.poll_ms as number | undefined) ?? DEFAULTS.relayPollMs,
    logFormat: (raw?.log_format as 'text' | 'json' | undefined) ?? DEFAULTS.relayLogFormat,
    stallMs: (raw?.stall_ms as number | undefined) ?? DEFAULTS.relayStallMs,
    heartbeatRetentionMs: parseDuration((raw?.heartbeat_retention as string | undefined) ?? DEFAULTS.relayHeartbeatRetention),
  }
  if (typeof raw?.id === 'string') relay.id = raw.id
  if (typeof raw?.key === 'string') relay.key = resolvePath(dir, raw.key)
  if (typeof raw?.health_port === 'number') relay.healthPort = raw.health_port
  return relay
}

export function normalizeTarget(raw: Table, dir: string): TargetConfig {
  if (raw.type === 'repo') {
    return {
      type: 'repo',
      path: resolvePath(dir, raw.path as string),
      branch: (raw.branch as string | undefined) ?? DEFAULTS.repoBranch,
      author: (raw.author as string | undefined) ?? DEFAULTS.repoAuthor,
    }
  }
  if (raw.type === 'postgres_row') return normalizePostgresRow(raw)
  if (raw.type === 'stripe') return { type: 'stripe', apiKey: raw.api_key as string, ...service(raw, DEFAULTS.stripeBaseUrl) }
  if (raw.type === 'sendgrid') return { type: 'sendgrid', apiKey: raw.api_key as string, ...service(raw, DEFAULTS.sendgridBaseUrl) }
  if (raw.type === 'slack') return { type: 'slack', token: raw.token as string, ...service(raw, DEFAULTS.slackBaseUrl) }
  if (raw.type === 'github') return normalizeGithub(raw)
  if (raw.type === 's3') return normalizeS3(raw)
  if (raw.type === 'mcp') return normalizeMcp(raw, dir)
  if (raw.type === 'webhook') {
    return {
      type: 'webhook',
      url: raw.url as string,
      secret: raw.secret as string,
      headers: { ...((raw.headers as Record<string, string> | undefined) ?? {}) },
      timeoutMs: (raw.timeout_ms as number | undefined) ?? DEFAULTS.timeoutMs,
      connectTimeoutMs: (raw.connect_timeout_ms as number | undefined) ?? DEFAULTS.connectTimeoutMs,
    }
  }
  if (raw.type === 'module') {
    // proxy_http is Interlock's (who may call mcp-proxy --http), not the module's.
    const { type: _type, module, proxy_http, ...settings } = raw
    const target: ModuleTargetConfig = { type: 'module', module: module as string, dir, settings: structuredClone(settings) }
    if (proxy_http !== undefined) target.proxyHttp = normalizeProxyHttp(proxy_http as Table)
    return target
  }
  const target: HttpTargetConfig = {
    ...normalizeHttpTemplates(raw),
    type: 'http',
    tier: raw.tier as Tier,
    url: raw.url as string,
    method: (raw.method as HttpTargetConfig['method'] | undefined) ?? DEFAULTS.httpMethod,
    headers: { ...((raw.headers as Record<string, string> | undefined) ?? {}) },
    timeoutMs: (raw.timeout_ms as number | undefined) ?? DEFAULTS.timeoutMs,
    connectTimeoutMs: (raw.connect_timeout_ms as number | undefined) ?? DEFAULTS.connectTimeoutMs,
  }
  if (typeof raw.query_url === 'string') target.queryUrl = raw.query_url
  if (typeof raw.premise_url === 'string') target.premiseUrl = raw.premise_url
  if (typeof raw.notary === 'string') target.notary = raw.notary
  if (raw.notary_services !== undefined) target.notaryServices = { ...(raw.notary_services as Record<string, string>) }
  const actions = normalizeHttpActions(raw.actions)
  if (actions) target.actions = actions
  return target
}

function normalizePostgresRow(raw: Table): PostgresRowTargetConfig {
  const target: PostgresRowTargetConfig = {
    type: 'postgres_row',
    url: raw.url as string,
    table: raw.table as string,
    effectIdColumn: (raw.effect_id_column as string | undefined) ?? DEFAULTS.effectIdColumn,
    columns: { ...((raw.columns as Record<string, string> | undefined) ?? {}) },
    premiseParams: [...((raw.premise_params as string[] | undefined) ?? [])],
    compensateParams: [...((raw.compensate_params as string[] | undefined) ?? [])],
    statementTimeoutMs: (raw.statement_timeout_ms as number | undefined) ?? DEFAULTS.statementTimeoutMs,
    timeoutMs: (raw.timeout_ms as number | undefined) ?? DEFAULTS.timeoutMs,
    connectTimeoutMs: (raw.connect_timeout_ms as number | undefined) ?? DEFAULTS.connectTimeoutMs,
  }
  if (typeof raw.premise_sql === 'string') target.premiseSql = raw.premise_sql
  if (typeof raw.compensate_sql === 'string') target.compensateSql = raw.compensate_sql
  return target
}

function service(raw: Table, baseUrl: string): ServiceTargetConfig {
  return {
    baseUrl: (raw.base_url as string | undefined) ?? baseUrl,
    timeoutMs: (raw.timeout_ms as number | undefined) ?? DEFAULTS.timeoutMs,
    connectTimeoutMs: (raw.connect_timeout_ms as number | undefined) ?? DEFAULTS.connectTimeoutMs,
  }
}

function normalizeGithub(raw: Table): GithubTargetConfig {
  return {
    type: 'github',
    token: raw.token as string,
    owner: raw.owner as string,
    repo: raw.repo as string,
    mergeMethod: (raw.merge_method as GithubTargetConfig['mergeMethod'] | undefined) ?? DEFAULTS.githubMergeMethod,
    ...service(raw, DEFAULTS.githubBaseUrl),
  }
}

function normalizeS3(raw: Table): S3TargetConfig {
  const target: S3TargetConfig = {
    type: 's3',
    bucket: raw.bucket as string,
    region: raw.region as string,
    accessKeyId: raw.access_key_id as string,
    secretAccessKey: raw.secret_access_key as string,
    pathStyle: (raw.path_style as boolean | undefined) ?? DEFAULTS.s3PathStyle,
    timeoutMs: (raw.timeout_ms as number | undefined) ?? DEFAULTS.timeoutMs,
    connectTimeoutMs: (raw.connect_timeout_ms as number | undefined) ?? DEFAULTS.connectTimeoutMs,
  }
  if (typeof raw.session_token === 'string') target.sessionToken = raw.session_token
  if (typeof raw.endpoint === 'string') target.endpoint = raw.endpoint
  return target
}

// `:memory:` is SQLite's in-process database, not a file name.
function resolvePath(dir: string, path: string): string {
  return path === ':memory:' || isAbsolute(path) ? path : resolve(dir, path)
}

export function normalizeNotary(raw: Table | undefined, dir: string): NotaryConfig | undefined {
  if (raw === undefined) return undefined
  const listen = (raw.listen as string | undefined) ?? DEFAULTS.notaryListen
  const colon = listen.lastIndexOf(':')
  return {
    host: listen.slice(0, colon).replace(/^\[(.*)\]$/, '$1'),
    port: Number(listen.slice(colon + 1)),
    path: resolvePath(dir, (raw.path as string | undefined) ?? DEFAULTS.notaryPath),
    agents: { ...((raw.agents as Record<string, string> | undefined) ?? {}) },
    services: { ...((raw.services as Record<string, string> | undefined) ?? {}) },
    ...(typeof raw.url === 'string' ? { postgres: { url: raw.url, schema: (raw.schema as string | undefined) ?? DEFAULTS.notarySchema } } : {}),
  }
}
