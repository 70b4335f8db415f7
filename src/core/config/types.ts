/**
 * interlock.toml, as the engine sees it after validation (config/load.ts).
 * TOML keys are snake_case; these types are their camelCase form. `${ENV}`
 * references are already resolved; the resolved secret values are listed in
 * `secrets` so output can be scrubbed of them (config/redact.ts).
 */
import type { Tier } from '../effect.js'
import type { HttpActionConfig, HttpTemplateKeys } from './types-http.js'

export interface SqliteStoreConfig {
  kind: 'sqlite'
  /** Journal file; relative paths are relative to the config file's folder. */
  path: string
}

export interface PostgresStoreConfig {
  kind: 'postgres'
  /** Connection string, usually `${INTERLOCK_DATABASE_URL}`. */
  url: string
  /** Schema holding Interlock's tables (default "interlock"). */
  schema: string
  /**
   * What the database role may do (default "full"): "agent" only proposes
   * and reads its own effects, through the schema's propose() and own_* views.
   */
  access?: 'full' | 'agent'
  /**
   * Limits set on every connection of the store's pool (SET on connect; 0:
   * not set, the role's or database's setting applies). Defaults: 15000,
   * 5000, 10000 (config/defaults.ts; docs/dbas.md, "Limits on the store's
   * connections", says why).
   */
  statementTimeoutMs?: number
  lockTimeoutMs?: number
  idleInTransactionTimeoutMs?: number
  /** Set: the operator accepts an asynchronously replicated primary (stores/postgres/replication.ts). */
  replication?: 'async-accepted'
}

export type StoreConfig = SqliteStoreConfig | PostgresStoreConfig

export interface GateConfig {
  /** Tries per dispatch before a tier-1/2 effect is left in flight for recovery (default 5). */
  maxAttempts: number
  /** First back-off between tries, doubled each time (default 200). */
  backoffMs: number
  /** Longest wait in place between tries; a service asking for longer gets the effect returned to AUTHORIZED (default 30000). */
  maxWaitMs: number
}

export interface RepoTargetConfig {
  type: 'repo'
  /** Working repository; relative to the config file's folder. */
  path: string
  /** Branch effects are committed to (default "main"). */
  branch: string
  /** Commit author, "Name <email>" (default "Interlock <interlock@localhost>"). */
  author: string
}

/**
 * A service reached over HTTP. Without templates, apply sends Interlock's
 * envelope {"action","args","effect_id"}; with them (types-http.ts), the
 * service's own request, per action where `actions` says.
 */
export interface HttpTargetConfig extends Omit<HttpTemplateKeys, 'method' | 'url' | 'headers'> {
  type: 'http'
  tier: Tier
  /** Where apply sends the request; `{effect_id}`, `{action}` and `{args.PATH}` are substituted. */
  url: string
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** Per action: its own request, answer rules, query and premises; any other action is refused when given. */
  actions?: Record<string, HttpActionConfig>
  /** Tier 2 only (required there): GET this; 2xx = it happened, 404 = it did not. */
  queryUrl?: string
  /** Optional GET whose JSON body is the premise snapshot; validate compares it again. */
  premiseUrl?: string
  headers: Record<string, string>
  /** Total time for one request, headers and body (default 10000). */
  timeoutMs: number
  /** Time to establish the connection (default 3000). */
  connectTimeoutMs: number
  /** Tier 3 only: the notary's URL; the target is then wrapped with notarized() (docs/notary.md). */
  notary?: string
  /** Service names → public keys whose notary records are believed; default: this file's [notary.services]. */
  notaryServices?: Record<string, string>
}

/** Rows in a PostgreSQL table (tier 2): one row per effect, found again by its effect id column. */
export interface PostgresRowTargetConfig {
  type: 'postgres_row'
  /** Connection string, usually `${ORDERS_DATABASE_URL}`. */
  url: string
  /** Table the rows go into, optionally schema-qualified ("shop.orders"). */
  table: string
  /** Column holding the effect id; must carry a unique constraint (default "effect_id"). */
  effectIdColumn: string
  /** Effect args key → column name. */
  columns: Record<string, string>
  /** Read-only query whose rows are the premises; FOR UPDATE is appended inside apply's transaction. */
  premiseSql?: string
  /** Effect args giving premiseSql's $1..$n, in order. */
  premiseParams: string[]
  /** Statement that undoes an effect; must be idempotent (recovery may run it again). */
  compensateSql?: string
  /** Names giving compensateSql's $1..$n: "effect_id" (the compensated effect's) or an args key. */
  compensateParams: string[]
  /** Server-side limit per statement (default 5000). */
  statementTimeoutMs: number
  /** Client-side limit per statement, above statementTimeoutMs (default 10000). */
  timeoutMs: number
  /** Time to establish a connection (default 3000). */
  connectTimeoutMs: number
}

/** What every vendor-API target shares: where the API is and how long a call may take. */
export interface ServiceTargetConfig {
  /** The API's base URL: the real service's by default, an emulator's in tests. */
  baseUrl: string
  /** Total time for one request, headers and body (default 10000). */
  timeoutMs: number
  /** Time to establish the connection (default 3000). */
  connectTimeoutMs: number
}

/** Stripe refunds (tier 1): `POST /v1/refunds` with the effect id as Idempotency-Key. */
export interface StripeTargetConfig extends ServiceTargetConfig {
  type: 'stripe'
  /** Secret or restricted key, from `${STRIPE_API_KEY}`. */
  apiKey: string
}

/** SendGrid mail send (tier 3): `POST /v3/mail/send`. */
export interface SendgridTargetConfig extends ServiceTargetConfig {
  type: 'sendgrid'
  /** API key with the mail.send scope, from `${SENDGRID_API_KEY}`. */
  apiKey: string
}

/** Slack messages (tier 3): `chat.postMessage`, compensated by `chat.delete`. */
export interface SlackTargetConfig extends ServiceTargetConfig {
  type: 'slack'
  /** Bot token (xoxb-...), from `${SLACK_TOKEN}`. */
  token: string
}

/** GitHub pull request merges (tier 2): the merge commit carries the effect id trailer. */
export interface GithubTargetConfig extends ServiceTargetConfig {
  type: 'github'
  /** Token allowed to merge and write contents, from `${GITHUB_TOKEN}`. */
  token: string
  owner: string
  repo: string
  /** How pull requests are merged when an effect does not say (default "merge"). */
  mergeMethod: 'merge' | 'squash'
}

/** Objects in an S3 bucket (tier 2): each write carries the effect id in the object's metadata. */
export interface S3TargetConfig {
  type: 's3'
  bucket: string
  region: string
  /** From `${AWS_ACCESS_KEY_ID}`. */
  accessKeyId: string
  /** From `${AWS_SECRET_ACCESS_KEY}`; signs requests, never sent. */
  secretAccessKey: string
  /** Temporary credentials' token, from `${AWS_SESSION_TOKEN}`. */
  sessionToken?: string
  /** Origin of an S3-compatible store; default AWS's for the region. */
  endpoint?: string
  /** Bucket in the URL path rather than the host name (default false). */
  pathStyle: boolean
  /** Total time for one request, headers and body (default 10000). */
  timeoutMs: number
  /** Time to establish the connection (default 3000). */
  connectTimeoutMs: number
}

/** One read an MCP tool's call rests on, or the read that asks whether it happened. */
export interface McpReadConfig {
  tool: string
  /** Templated: `{effect_id}`, `{args.<path>}` (targets/mcp/template.ts). */
  args: Record<string, unknown>
}

/** [targets.<name>.tools.<tool>]: how one upstream tool goes through the gate. */
export interface McpToolConfig {
  tier: Tier | 'read'
  /** Tier 1: the argument that takes the effect id as an idempotency key. */
  keyArg?: string
  /** Where the sent arguments carry the effect id (appended to a list, else set). */
  mark?: { path: string; value: string }
  /** Tier 2: the read whose result contains `found` once the effect happened. */
  query?: McpReadConfig & { found: string }
  /** Premises: the reads the call rests on, read again before it is sent. */
  restsOn: McpReadConfig[]
  /** When an identical call after a COMMITTED one is a retry (default "window"). */
  dedupe: 'window' | 'always' | 'marked'
  /** dedupe = "window": how long after the first committed (default 10 minutes). */
  dedupeWindowMs: number
  /** Principals who may call this tool through the proxy (patterns: core/principal-pattern.ts); undefined: anyone the target allows. */
  allow?: string[]
  /** Principals who may not, whatever `allow` says. */
  deny?: string[]
}

/** An MCP server (tier per tool): stdio `command`, or Streamable HTTP `url`. */
export interface McpTargetConfig {
  type: 'mcp'
  command?: string
  args: string[]
  env: Record<string, string>
  /** Names of variables of Interlock's own environment passed on to the server as they are, when set. */
  envPass: string[]
  /** Absolute, resolved against the config file's folder (default: that folder). */
  cwd?: string
  url?: string
  headers: Record<string, string>
  /** The default thread of a proxy session: "per-session" (default), "per-client", or one thread's name. */
  thread: string
  /** One answer of the server (default 60000). */
  timeoutMs: number
  /** Start or reach the server and initialize (default 10000). */
  connectTimeoutMs: number
  /** Largest result journaled with COMMITTED (default 65536). */
  maxResultBytes: number
  /** Principals who may call any tool through the proxy (patterns: core/principal-pattern.ts); undefined: anyone. */
  allow?: string[]
  /** Principals who may call none. */
  deny?: string[]
  tools: Record<string, McpToolConfig>
  /** [targets.<name>.proxy_http]: who may call `mcp-proxy --http`, from where. */
  proxyHttp?: McpProxyHttpConfig
}

/** [targets.<name>.proxy_http]: Host and Origin allowed, and how callers authenticate. */
export interface McpProxyHttpConfig {
  /** Host header values: "name" (any port) or "name:port". */
  allowedHosts: string[]
  /** Origin header values, e.g. "https://app.example.com". */
  allowedOrigins: string[]
  /** The URL clients reach /mcp at (OAuth metadata's `resource`, default audience). */
  resource?: string
  /** Static bearer tokens (values from `${VAR}`), each proving a principal. */
  tokens: { principal: string; token: string }[]
  oauth?: McpOAuthConfig
}

/** [targets.<name>.proxy_http.oauth]: JWT access tokens from one issuer. */
export interface McpOAuthConfig {
  issuer: string
  /** Default: the resource URL. */
  audience?: string
  /** Default: discovered from the issuer's metadata at start. */
  jwksUri?: string
  /** Scopes every token must grant. */
  scopes: string[]
}

export type TargetConfig =
  | RepoTargetConfig
  | HttpTargetConfig
  | PostgresRowTargetConfig
  | StripeTargetConfig
  | SendgridTargetConfig
  | SlackTargetConfig
  | GithubTargetConfig
  | S3TargetConfig
  | McpTargetConfig
  | ModuleTargetConfig
  | WebhookTargetConfig

/** A signed JSON webhook, tier 1 (targets/webhook/). */
export interface WebhookTargetConfig {
  type: 'webhook'
  url: string
  secret: string
  headers: Record<string, string>
  timeoutMs: number
  connectTimeoutMs: number
}

/** Your own code: a module exporting defineTarget() (targets/module/). */
export interface ModuleTargetConfig {
  type: 'module'
  /** As written: a path relative to `dir`, or a package name resolved from there. */
  module: string
  /** The config file's folder. */
  dir: string
  /** Every other key of the table, as written (snake_case, `${VAR}` resolved): checked by the module's schema. */
  settings: Record<string, unknown>
  /** Who may call `mcp-proxy --http` for the module's tools, as for an mcp target. */
  proxyHttp?: McpProxyHttpConfig
}

/** [reconcile]: how `interlock reconcile-effects` sweeps the store. */
export interface ReconcileConfig {
  /** Grace period: effects in flight for less than this are left to whoever works on them (default 5 minutes). */
  olderThanMs: number
  /** Effects reconciled at once per target (default 4). */
  concurrency: number
}

/** [relay]: how `interlock relay` drains the outbox. */
export interface RelayConfig {
  /** Names the relay in leases, heartbeats and receipts (default "<host>-<pid>", chosen at start). */
  id?: string
  /** Private key file signing the records the relay writes and its receipts, resolved against the config file's folder. */
  key?: string
  /** Most effects in flight per target (default 32). */
  concurrency: number
  /** Lease length in milliseconds (default 30000). */
  leaseMs: number
  /** Longest wait between claims in milliseconds (default 1000). */
  pollMs: number
  /** Port of 127.0.0.1 for /healthz and /metrics; undefined: not served. */
  healthPort?: number
  /** "text" (default): a line for people; "json": one JSON object per line, for journald and log shippers. */
  logFormat: 'text' | 'json'
  /** /healthz says unhealthy when no progress was made, or a store call has been pending, for this long (default 20000). */
  stallMs: number
  /** Rows of relays not seen for this long are deleted by a running relay's heartbeat (default 7 days). */
  heartbeatRetentionMs: number
}

/** [notary]: how `interlock notary serve` runs (docs/notary.md). */
export interface NotaryConfig {
  host: string
  port: number
  /** The SQLite log file, resolved against the config file's folder (unused with `postgres`). */
  path: string
  /** [notary] url (and schema): the log in PostgreSQL instead of SQLite. */
  postgres?: { url: string; schema: string }
  /** Agent names → public keys: who may write intend and abort. */
  agents: Record<string, string>
  /** Service names → public keys: who may write claim, performed and failed. */
  services: Record<string, string>
}

export interface InterlockConfig {
  /** Absolute path of the file this came from (undefined for defaults). */
  file?: string
  store: StoreConfig
  gate: GateConfig
  targets: Record<string, TargetConfig>
  /** [[operators]]: who may release, deny and resolve (empty: nobody). */
  operators: OperatorConfig[]
  /** [policy]: which effects wait for operators (no rules: none). */
  policy: PolicyConfig
  /** [[notify]]: who is told when effects wait for people (none: nobody). */
  notify: NotifyRuleConfig[]
  /** [reconcile]; absent in hand-built configs, where DEFAULTS apply. */
  reconcile?: ReconcileConfig
  /** [relay]; absent in hand-built configs, where DEFAULTS apply. */
  relay?: RelayConfig
  /** [notary]; absent when the file has none. */
  notary?: NotaryConfig
  /** Resolved values of `${ENV}` references: never printed, never journaled. */
  secrets: string[]
  /**
   * Targets' `${VAR}` references whose variable is not set (or empty), one
   * problem each, naming its key path. Left as written: a command that only
   * reads the store runs without them; building such a target is refused.
   */
  unresolved?: string[]
}

/** An operator trusted to sign releases, denials and resolutions. */
export interface OperatorConfig {
  name: string
  /** `ed25519:<base64url>`. */
  publicKey: string
}

/** One comparison on an effect argument, as exact decimals (strings, never floats). */
export interface PolicyCondition {
  /** Args key, or a dotted path into nested args. */
  arg: string
  above?: string
  atLeast?: string
  below?: string
  atMost?: string
  /** Upper-case currency code the effect's args.currency must have for the condition to apply. */
  currency?: string
}

export interface PolicyRuleConfig {
  name: string
  target?: string
  action?: string
  tier?: Tier
  /** Only effects asked for by this principal (core/principal-pattern.ts: exact, or a prefix ending in `*`). */
  principal?: string
  /** All must hold (empty: the rule holds every effect it matches). */
  when: PolicyCondition[]
  /** Distinct trusted operators needed to release (default 1). */
  quorum: number
  /** How long a signed release stays valid (default one hour). */
  releaseTtlMs: number
}

export interface PolicyConfig {
  rules: PolicyRuleConfig[]
}

/** One [[notify]] rule (notify/). */
export interface NotifyRuleConfig {
  name: string
  on: Array<'held' | 'release' | 'ambiguous' | 'ambiguous_waiting' | 'failed' | 'refused'>
  channel: string
  targets?: string[]
  rules?: string[]
  principals?: string[]
  /** 0: one notice per event. */
  windowMs: number
  waitingMs?: number
  slackChannel?: string
  to?: string[]
  from?: string
  consoleUrl?: string
}
