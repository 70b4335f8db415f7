/**
 * JSON Schema (draft-07) of interlock.toml, keys exactly as written in TOML.
 *
 * One schema serves two readers: the loader validates with it (ajv, all
 * errors at once) and editors use the generated schemas/interlock.schema.json
 * for completion and hover text, which is why every property has a
 * `description`. Unknown keys are rejected everywhere (`additionalProperties:
 * false`) because a misspelt key silently falling back to a default is how a
 * safety setting gets lost.
 *
 * `patternErrorMessage` is the VS Code extension keyword for a readable
 * pattern failure; the loader registers it with ajv and uses it too.
 *
 * String values may hold `${VAR}` references, expanded after validation, so
 * patterns on expandable strings accept a leading `${`.
 *
 * Later sections (policy, operators, relay, reconcile) get their own entry in
 * `properties` below when they exist.
 */

import { githubTarget, s3Target } from './schema-github-s3.js'
import { DURATION, operators, policy } from './schema-policy.js'
import { notary, notaryKeys } from './schema-notary.js'
import { relay } from './schema-relay.js'
import { DURATION_MAX_MS, durationMs, httpTimeouts } from './schema-common.js'
import { sendgridTarget, slackTarget, stripeTarget, webhookTarget } from './schema-services.js'
import { mcpTarget } from './schema-mcp.js'
import { mcpProxyHttp } from './schema-mcp-http.js'
import { notify } from './schema-notify.js'
import { httpActions, httpTemplateKeys, oneBody } from './schema-http.js'


const sqliteStore = {
  type: 'object',
  additionalProperties: false,
  properties: {
    // The outer `store` schema checks the value; listed here so it is not an unknown key.
    kind: { description: 'Embedded SQLite journal (the default).' },
    path: {
      type: 'string',
      minLength: 1,
      description:
        'Journal file. Relative paths are relative to the folder of this config file. Default "./interlock.db".',
    },
  },
} as const

/** A PostgreSQL session limit in milliseconds; 0 leaves the server's setting. */
const sessionLimit = (description: string) => ({ type: 'integer', minimum: 0, maximum: DURATION_MAX_MS, description }) as const

const postgresStore = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    kind: { description: 'Shared PostgreSQL outbox, drained by one or more relays.' },
    url: {
      type: 'string',
      minLength: 1,
      pattern: '^(postgres(ql)?://|\\$\\{)',
      patternErrorMessage: 'must be a postgres:// or postgresql:// URL, or a ${VAR} reference',
      description: 'Connection string, usually "${INTERLOCK_DATABASE_URL}" so the password stays out of the file.',
    },
    schema: {
      type: 'string',
      pattern: '^[a-z_][a-z0-9_]{0,62}$',
      // Taken as written: a schema name is no secret, and every role's config and the grants name the same one.
      patternErrorMessage: 'must be a lower-case SQL identifier (letters, digits, _; at most 63 characters), written as is (${VAR} is not expanded here)',
      description: 'PostgreSQL schema holding Interlock\'s tables, written as is (not a ${VAR} reference). Default "interlock".',
    },
    access: {
      enum: ['full', 'agent'],
      description:
        'What the database role in `url` is granted (docs/dbas.md, "Database roles and grants"). "agent": it only proposes effects and reads its own (an agent\'s outbox; every other operation is refused). "full" (default): relays, operators and read-only tools, each limited by its own grants.',
    },
    replication: {
      enum: ['synchronous', 'async-accepted'],
      description:
        'What the store\'s replication must promise (docs/dbas.md, "Failover"). "synchronous" (default): on a primary with standbys, its commits must be synchronously replicated (synchronous_standby_names naming the standby, synchronous_commit on, remote_write or remote_apply), or `interlock check` fails and `interlock relay` refuses to start: an asynchronous standby promoted after a crash may lack the last DISPATCHED records, and their effects would be sent again. "async-accepted": the operator accepts that risk; the relay says so once at start. A single server with no standby passes either way.',
    },
    statement_timeout_ms: sessionLimit(
      'PostgreSQL statement_timeout set on every connection of the store, in milliseconds: a statement running longer is cancelled and retried. 0: not set (the role\'s or database\'s setting applies). Default 15000.',
    ),
    lock_timeout_ms: sessionLimit(
      'PostgreSQL lock_timeout set on every connection of the store, in milliseconds: a statement waiting longer for a lock (an upgrade\'s ACCESS EXCLUSIVE, a long manual transaction) gives up and is retried, instead of queueing behind it. 0: not set. Default 5000.',
    ),
    idle_in_transaction_timeout_ms: sessionLimit(
      'PostgreSQL idle_in_transaction_session_timeout set on every connection of the store, in milliseconds: a process stopped inside a transaction loses its connection, and the row locks it held, after this long. 0: not set. Default 10000.',
    ),
  },
} as const

const store = {
  type: 'object',
  description: 'Where the journal lives: an SQLite file (default) or a PostgreSQL schema.',
  properties: {
    kind: {
      enum: ['sqlite', 'postgres'],
      description: 'Store engine: "sqlite" (default, embedded) or "postgres" (shared outbox).',
    },
  },
  // Each kind allows only its own keys: a `url` under sqlite is a mistake, not a no-op.
  if: { properties: { kind: { const: 'postgres' } }, required: ['kind'] },
  then: postgresStore,
  else: sqliteStore,
} as const

const gate = {
  type: 'object',
  additionalProperties: false,
  description: 'How the gate dispatches an effect.',
  properties: {
    max_attempts: {
      type: 'integer',
      minimum: 1,
      maximum: 100,
      description:
        'Tries per dispatch before a tier 1 or 2 effect is left in flight for recovery. Default 5.',
    },
    backoff_ms: {
      type: 'integer',
      minimum: 0,
      maximum: DURATION_MAX_MS,
      description: 'First back-off between tries in milliseconds, doubled after each try. Default 200.',
    },
    max_wait_ms: {
      type: 'integer',
      minimum: 0,
      maximum: DURATION_MAX_MS,
      description:
        'Longest wait in place between tries, in milliseconds: a Retry-After or rate-limit reset a service asks for, and the back-off. A service that asks for longer gets the effect back: it returns to AUTHORIZED and is not sent again before that time, so no relay slot, lease or inline submit waits on it. Default 30000.',
    },
  },
} as const

const reconcile = {
  type: 'object',
  additionalProperties: false,
  description: 'How `interlock reconcile-effects` sweeps the store for effects left in flight.',
  properties: {
    older_than: {
      type: 'string',
      pattern: DURATION,
      patternErrorMessage: 'must be a whole number followed by ms, s, m, h or d, e.g. "5m"',
      description:
        'Grace period: effects whose last journal record is younger than this are left to whoever is working on them. A number and a unit (ms, s, m, h, d). Default "5m".',
    },
    concurrency: {
      type: 'integer',
      minimum: 1,
      maximum: 64,
      description: 'Effects reconciled at once per target. Default 4.',
    },
  },
} as const

const repoTarget = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'path'],
  properties: {
    type: { const: 'repo', description: 'A local git working repository (tier 2).' },
    path: {
      type: 'string',
      minLength: 1,
      description: 'Working repository. Relative paths are relative to the folder of this config file.',
    },
    branch: {
      type: 'string',
      minLength: 1,
      description: 'Branch effects are committed to. Default "main".',
    },
    author: {
      type: 'string',
      pattern: '^(\\$\\{|[^<>]+ <[^<>]+>$)',
      patternErrorMessage: 'must look like "Name <email>"',
      description: 'Commit author, "Name <email>". Default "Interlock <interlock@localhost>".',
    },
  },
} as const

const httpUrl = (description: string) =>
  ({
    type: 'string',
    pattern: '^(https?://|\\$\\{)',
    patternErrorMessage: 'must be an http:// or https:// URL, or start with a ${VAR} reference',
    description,
  }) as const

const notaryTargetKeys = {
  notary: httpUrl(
    'Tier 3 only: the notary (`interlock notary serve`, docs/notary.md) this service writes to. The agent writes intend there before each send, signed with the [relay] key under that key\'s name, names it in the effect\'s DISPATCHED record, and recovery asks the notary instead of going AMBIGUOUS; a late request whose claim beats recovery\'s abort is being performed, and recovery waits up to timeout_ms for its outcome there. Only http targets take it (no other type sends the Interlock-Effect header to a service that records performed itself; the loader refuses it there). An effect in flight whose DISPATCHED record names a notary this key no longer names goes AMBIGUOUS on recovery: remove or change it only when none is in flight.',
  ),
  notary_services: {
    ...notaryKeys,
    description: 'Services whose records at the notary are believed: name = public key (`interlock notary keygen`). Default: this file\'s [notary.services].',
  },
} as const

const httpTarget = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'tier', 'url'],
  properties: {
    type: { const: 'http', description: 'A service reached over HTTP.' },
    tier: {
      enum: [1, 2, 3],
      description:
        'What the service guarantees. 1: it deduplicates by idempotency key. 2: it can be asked whether the effect happened (needs query_url). 3: neither; a crash in flight becomes AMBIGUOUS.',
    },
    url: httpUrl('Where apply sends the request (by `method`); {effect_id}, {action} and {args.PATH} (a string, number or boolean argument, e.g. {args.to} or {args.customer.id}) are substituted, each URL-encoded. Without body, form or graphql the body is Interlock\'s envelope {"action","args","effect_id"} as canonical JSON (docs/targets.md, "The envelope (no template)").'),
    method: {
      enum: ['POST', 'PUT', 'PATCH', 'DELETE'],
      description: 'HTTP method of the apply request. Default "POST".',
    },
    query_url: httpUrl(
      'Tier 2 only, and required there: GET this to learn whether the effect happened (2xx: it did, 404: it did not). {effect_id}, {action} and {args.NAME} are substituted.',
    ),
    premise_url: httpUrl(
      'Optional GET whose JSON body is the premise snapshot, captured at decision time and compared again before dispatch. {action} and {args.NAME} are substituted; {effect_id} is not (premises are read before the effect exists).',
    ),
    headers: {
      type: 'object',
      description: 'Extra request headers, e.g. Authorization = "Bearer ${API_TOKEN}". Values are secrets: kept out of errors, receipts and `interlock check`.',
      additionalProperties: { type: 'string', description: 'Header value.' },
    },
    ...httpTemplateKeys,
    actions: httpActions,
    ...httpTimeouts,
    ...notaryTargetKeys,
  },
  dependencies: { notary_services: ['notary'] },
  allOf: [
    // Tier 2 is defined by the query: query_url, a [query] table, or each action's own (checked at load, templates.ts).
    {
      if: { properties: { tier: { const: 2 } }, required: ['tier'], not: { anyOf: [{ required: ['query'] }, { required: ['actions'] }] } },
      then: { required: ['query_url'] },
    },
    // On other tiers a target-level query would be silently unused.
    { if: { properties: { tier: { const: 2 } }, required: ['tier'] }, else: { properties: { query_url: false, query: false } } },
    ...oneBody,
    // The notary lifts tier 3 to tier 2; a tier 1 or 2 service already answers for itself.
    { if: { properties: { tier: { const: 3 } }, required: ['tier'] }, else: { properties: { notary: false } } },
  ],
} as const

const SQL_NAME = '[a-z_][a-z0-9_]{0,62}'
const sqlName = (description: string) =>
  ({
    type: 'string',
    pattern: `^${SQL_NAME}$`,
    patternErrorMessage: 'must be a lower-case SQL identifier (letters, digits, _; at most 63 characters)',
    description,
  }) as const
const argNames = (description: string) =>
  ({ type: 'array', items: { type: 'string', minLength: 1, description: 'An effect args key.' }, description }) as const

const postgresRowTarget = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'url', 'table'],
  properties: {
    type: {
      const: 'postgres_row',
      description: 'Rows in a PostgreSQL table (tier 2): INSERT ... ON CONFLICT (effect id) DO NOTHING, found again by the effect id.',
    },
    url: {
      type: 'string',
      minLength: 1,
      pattern: '^(postgres(ql)?://|\\$\\{)',
      patternErrorMessage: 'must be a postgres:// or postgresql:// URL, or a ${VAR} reference',
      description: 'Connection string, usually "${ORDERS_DATABASE_URL}" so the password stays out of the file.',
    },
    table: {
      type: 'string',
      pattern: `^${SQL_NAME}(\\.${SQL_NAME})?$`,
      patternErrorMessage: 'must be a lower-case table name, optionally schema-qualified ("orders" or "shop.orders")',
      description: 'Table each effect inserts one row into, optionally schema-qualified ("shop.orders").',
    },
    effect_id_column: sqlName(
      'Column holding the effect id. It must have a unique constraint of its own (ON CONFLICT relies on it); checked at first use. Default "effect_id".',
    ),
    columns: {
      type: 'object',
      description: 'Which effect args go into which columns: args key = "column". Every key is required in the args, and args not listed here (or in premise_params / compensate_params) are refused.',
      additionalProperties: sqlName('Column the args value is written to.'),
    },
    premise_sql: {
      type: 'string',
      minLength: 1,
      description:
        'A read-only SELECT whose rows are the premises, e.g. "SELECT status, balance FROM accounts WHERE id = $1". Captured when the agent decides, compared again before dispatch, and re-run with FOR UPDATE appended in the same transaction as the INSERT. Write no locking clause yourself; give it an ORDER BY if it can return several rows.',
    },
    premise_params: argNames('Effect args giving premise_sql\'s $1..$n, in order, e.g. ["account_id"].'),
    compensate_sql: {
      type: 'string',
      minLength: 1,
      description:
        'Statement that undoes a committed effect, e.g. "DELETE FROM orders WHERE effect_id = $1". It must be idempotent: after a crash recovery may run it again. Without it the target\'s effects are not compensable.',
    },
    compensate_params: argNames(
      'Names giving compensate_sql\'s $1..$n, in order: "effect_id" (the compensated effect\'s id) or an args key of the compensated effect.',
    ),
    statement_timeout_ms: durationMs('PostgreSQL statement_timeout for every statement, in milliseconds. Default 5000.'),
    timeout_ms: durationMs(
      'Client-side limit for every statement, in milliseconds; must be above statement_timeout_ms so the server\'s definite answer comes first. Default 10000.',
    ),
    connect_timeout_ms: durationMs('Time to establish a connection, in milliseconds. Default 3000.'),
  },
  dependencies: { premise_params: ['premise_sql'], compensate_params: ['compensate_sql'] },
} as const

/** Your own code (targets/module/): the module's own schema checks every other key. */
const moduleTarget = {
  type: 'object',
  required: ['type', 'module'],
  properties: {
    type: { const: 'module', description: 'Your own target code: a module exporting defineTarget({ settings, create }).' },
    module: {
      type: 'string',
      minLength: 1,
      description:
        'The module: a path relative to this file\'s folder ("./targets/crm.js") or a package name. Its default export is defineTarget({ settings, create }); every other key of this table but proxy_http is its settings, checked against its `settings` JSON Schema (docs/targets.md, "Your own code: target modules").',
    },
    proxy_http: mcpProxyHttp,
  },
} as const

const target = {
  type: 'object',
  description: 'One effect target. `type` decides which other keys apply.',
  required: ['type'],
  properties: {
    type: {
      enum: ['repo', 'http', 'postgres_row', 'stripe', 'sendgrid', 'slack', 'github', 's3', 'mcp', 'webhook', 'module'],
      description: 'Kind of target: "repo" (local git), "http", "postgres_row", "stripe", "sendgrid", "slack", "github", "s3", "mcp" (an MCP server), "webhook" (a signed JSON POST) or "module" (your own code).',
    },
  },
  allOf: [
    { if: { properties: { type: { const: 'repo' } }, required: ['type'] }, then: repoTarget },
    { if: { properties: { type: { const: 'http' } }, required: ['type'] }, then: httpTarget },
    { if: { properties: { type: { const: 'postgres_row' } }, required: ['type'] }, then: postgresRowTarget },
    { if: { properties: { type: { const: 'stripe' } }, required: ['type'] }, then: stripeTarget },
    { if: { properties: { type: { const: 'sendgrid' } }, required: ['type'] }, then: sendgridTarget },
    { if: { properties: { type: { const: 'slack' } }, required: ['type'] }, then: slackTarget },
    { if: { properties: { type: { const: 'github' } }, required: ['type'] }, then: githubTarget },
    { if: { properties: { type: { const: 's3' } }, required: ['type'] }, then: s3Target },
    { if: { properties: { type: { const: 'mcp' } }, required: ['type'] }, then: mcpTarget },
    { if: { properties: { type: { const: 'webhook' } }, required: ['type'] }, then: webhookTarget },
    { if: { properties: { type: { const: 'module' } }, required: ['type'] }, then: moduleTarget },
  ],
} as const

export const configSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'interlock.toml',
  description: 'Configuration of Interlock: the store, the gate and the effect targets.',
  type: 'object',
  additionalProperties: false,
  properties: {
    store: store,
    gate: gate,
    targets: {
      type: 'object',
      description: 'Effect targets by name, as [targets.<name>] tables.',
      propertyNames: {
        pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$',
        patternErrorMessage: 'target names use letters, digits, "_" and "-" (at most 64 characters)',
      },
      additionalProperties: target,
    },
    operators: operators,
    policy: policy,
    reconcile: reconcile,
    relay: relay,
    notary: notary,
    notify: notify,
  },
} as const

export type ConfigSchema = typeof configSchema
