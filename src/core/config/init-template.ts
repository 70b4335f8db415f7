/**
 * `interlock init`: a commented interlock.toml for a chosen store and set of
 * targets. Every credential is a `${VAR}` reference (the schema refuses
 * literal credentials), every address the real service's, written out
 * commented so staging can point it elsewhere. The text is what a user
 * edits, so it explains each key once and leaves defaults commented.
 */
import { UsageError } from '../errors.js'
import { TARGET_TYPES } from '../targets/registry.js'

export type InitStore = 'sqlite' | 'postgres'
export type InitTargetType = (typeof TARGET_TYPES)[number]

export interface InitTarget {
  type: InitTargetType
  name: string
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/

/** `type[:name]` as given to --target; the name defaults to the type. */
export function parseInitTarget(spec: string): InitTarget {
  const [type, name = type, ...rest] = spec.split(':')
  if (!(TARGET_TYPES as readonly string[]).includes(type!)) {
    throw new UsageError(`--target ${spec}: unknown type "${type}"`, { hint: `Use one of ${TARGET_TYPES.join(', ')}, optionally with :<name> (e.g. stripe:refunds).` })
  }
  if (rest.length > 0 || !NAME.test(name!)) {
    throw new UsageError(`--target ${spec}: "${name}" is not a target name`, { hint: 'Target names use letters, digits, "_" and "-" (at most 64 characters).' })
  }
  return { type: type as InitTargetType, name: name! }
}

export function initTemplate(store: InitStore, targets: readonly InitTarget[]): string {
  const seen = new Set<string>()
  for (const t of targets) {
    if (seen.has(t.name)) throw new UsageError(`two targets are named "${t.name}"`, { hint: 'Give each --target its own name: --target stripe:refunds --target stripe:payouts.' })
    seen.add(t.name)
  }
  const vars = new EnvNames()
  return [HEADER, storeSection(store), GATE, ...targets.map((t) => targetSection(t, vars)), targets.length === 0 ? NO_TARGETS : '', OPERATORS].filter(Boolean).join('\n')
}

/**
 * Keys each target's section writes with an example value to replace with
 * the real one (owner = "your-org"); the others are ${VAR}s to export, or
 * defaults that work as written.
 */
const PLACEHOLDERS: Record<InitTargetType, readonly string[]> = {
  repo: ['path'],
  http: ['url'],
  postgres_row: ['table'],
  stripe: [],
  sendgrid: [],
  slack: [],
  github: ['owner', 'repo'],
  s3: ['bucket', 'region'],
  mcp: ['command', 'args'],
}

/** The key paths of the placeholders initTemplate writes for these targets, to fill in before `interlock check`. */
export function initPlaceholders(targets: readonly InitTarget[]): string[] {
  return targets.flatMap((t) => PLACEHOLDERS[t.type].map((key) => `targets.${t.name}.${key}`))
}

/** One environment variable per credential: the usual name first, prefixed with the target's name when taken. */
class EnvNames {
  private readonly used = new Set<string>()
  name(target: string, usual: string): string {
    const name = this.used.has(usual) ? `${target.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_${usual}` : usual
    this.used.add(name)
    return name
  }
}

const HEADER = `# interlock.toml, written by \`interlock init\`.
#
# \`interlock check\` checks this file, the store and every target (read-only);
# run it in CI against staging. \`interlock config show\` prints what is in effect.
# Unknown keys are errors, so a typo never silently falls back to a default.
# Every key is described in schemas/interlock.schema.json and interlock.toml.example.
#
# Credentials are \${VAR} references, read from the environment when a command
# starts: they never live in this file, and are shown as *** in all output.
# Relative paths are relative to this file's folder.
`

function storeSection(store: InitStore): string {
  if (store === 'sqlite') {
    return `# ── Store: the journal ─────────────────────────────────────────────────────────
[store]
# An embedded SQLite file, created and kept at the current schema when first opened.
kind = "sqlite"
path = "./interlock.db"
`
  }
  return `# ── Store: the journal ─────────────────────────────────────────────────────────
[store]
# A shared PostgreSQL outbox, drained by one or more relays. A DBA installs and
# upgrades its schema with \`interlock install\` (review first: --print-sql).
kind = "postgres"
url = "\${INTERLOCK_DATABASE_URL}"
# Schema holding Interlock's tables. Default "interlock".
schema = "interlock"
# An agent's copy of this file connects as the agent's own database role, which
# only proposes effects and reads its own (interlock install --print-grants):
# access = "agent"
`
}

const GATE = `# ── Gate ─────────────────────────────────────────────────────────────────────
[gate]
# Tries per dispatch before a tier 1 or 2 effect is left in flight for recovery.
max_attempts = 5
# First back-off between tries, in milliseconds, doubled after each try.
backoff_ms = 200
# Longest wait in place for a service's Retry-After or rate-limit reset, in milliseconds;
# a longer one returns the effect to AUTHORIZED until then.
max_wait_ms = 30000
`

const NO_TARGETS = `# ── Targets ──────────────────────────────────────────────────────────────────
# None yet. Add [targets.<name>] tables, or run \`interlock init --force --target <type>\`
# with the types you need: ${TARGET_TYPES.join(', ')}.
`

const OPERATORS = `# ── Operators and policy ─────────────────────────────────────────────────────
# Who may release held effects and resolve AMBIGUOUS ones. Each operator makes a
# key pair with \`interlock operator keygen --name <name>\` and sends the public key.
# [[operators]]
# name = "alice"
# public_key = "ed25519:..."
#
# Which effects wait for operators' signed release before dispatch.
# [[policy.rules]]
# name = "large-refunds"
# target = "refunds"
# action = "refund"
# when = [{ arg = "amount", above = "500.00" }]
# quorum = 1            # at most the number of [[operators]]
# release_ttl = "1h"
`

function targetSection(t: InitTarget, vars: EnvNames): string {
  const head = (what: string) => `# ── Target ${t.name}: ${what} ${'─'.repeat(Math.max(3, 62 - t.name.length - what.length))}\n[targets.${t.name}]\ntype = "${t.type}"\n`
  switch (t.type) {
    case 'stripe':
      return `${head('Stripe refunds (tier 1)')}# A secret or restricted key allowed to read charges and create refunds.
api_key = "\${${vars.name(t.name, 'STRIPE_API_KEY')}}"
# The API's address; point staging at a test-mode proxy or emulator here.
# base_url = "https://api.stripe.com"
`
    case 'sendgrid':
      return `${head('SendGrid mail (tier 3)')}# An API key with the mail.send and asm.suppressions.global.read scopes.
api_key = "\${${vars.name(t.name, 'SENDGRID_API_KEY')}}"
# base_url = "https://api.sendgrid.com"
`
    case 'slack':
      return `${head('Slack messages (tier 3)')}# A bot token (xoxb-...) with chat:write and channels:read.
token = "\${${vars.name(t.name, 'SLACK_TOKEN')}}"
# base_url = "https://slack.com"
`
    case 'github':
      return `${head('GitHub pull request merges (tier 2)')}# A token with "Pull requests" and "Contents" write on the repository.
token = "\${${vars.name(t.name, 'GITHUB_TOKEN')}}"
owner = "your-org"
repo = "your-repo"
# How pull requests are merged when an effect does not say: "merge" or "squash".
# merge_method = "merge"
# https://<host>/api/v3 for GitHub Enterprise Server.
# base_url = "https://api.github.com"
`
    case 's3':
      return `${head('S3 objects (tier 2)')}bucket = "your-bucket"
region = "us-east-1"
# Keys allowed s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject on the bucket.
access_key_id = "\${${vars.name(t.name, 'AWS_ACCESS_KEY_ID')}}"
secret_access_key = "\${${vars.name(t.name, 'AWS_SECRET_ACCESS_KEY')}}"
# For temporary credentials:
# session_token = "\${AWS_SESSION_TOKEN}"
# For S3-compatible stores (MinIO, R2): their origin, usually with path_style = true.
# endpoint = "https://s3.example.com"
# path_style = true
`
    case 'postgres_row':
      return `${head('rows in a PostgreSQL table (tier 2)')}url = "\${${vars.name(t.name, 'TARGET_DATABASE_URL')}}"
# The table gets one row per effect. Its effect id column needs a unique constraint
# of its own (\`interlock check\` fails without one: duplicates would be possible):
#   CREATE TABLE effects (effect_id text NOT NULL UNIQUE, payload text);
table = "effects"
# effect_id_column = "effect_id"
# Which effect args go into which columns: args key = "column".
# columns = { payload = "payload" }
`
    case 'http':
      return `${head('a service over HTTP')}# What the service guarantees. 1: it deduplicates by the Idempotency-Key header.
# 2: it can be asked whether an effect happened (set query_url). 3: neither.
tier = 3
url = "https://service.example.com/effects/{effect_id}"
# method = "POST"
# Tier 2 only: GET answers 2xx when the effect happened, 404 when it did not.
# query_url = "https://service.example.com/effects/{effect_id}"
# headers = { Authorization = "Bearer \${${vars.name(t.name, 'SERVICE_TOKEN')}}" }
`
    case 'repo':
      return `${head('a local git repository (tier 2)')}path = "./repo"
# branch = "main"
# author = "Interlock <interlock@localhost>"
`
    case 'mcp':
      return `${head('an MCP server (a tier per tool)')}# Put \`interlock mcp-proxy --target ${t.name}\` where your agent host starts this server.
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "./notes"]
# Or a Streamable HTTP server: url = "https://mcp.example.com/mcp", headers = { ... }
# env = { API_TOKEN = "\${${vars.name(t.name, 'MCP_API_TOKEN')}}" }
# Undeclared tools take their tier from their annotations (readOnlyHint: read,
# idempotentHint: 1, else 3). \`interlock check\` lists every tool with its tier.
# [targets.${t.name}.tools.edit_file]
# tier = 3
# rests_on = [{ tool = "read_text_file", args = { path = "{args.path}" } }]
`
  }
}
