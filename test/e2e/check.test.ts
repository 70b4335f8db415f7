/**
 * `interlock check` as CI runs it: the built binary against the emulators of
 * Stripe, GitHub, S3, SendGrid and Slack, a real PostgreSQL (store and a
 * postgres_row target) and a real git repository. Each failure mode the issue
 * names produces its own failing check id and exit 1; a healthy setup exits
 * 0; --json matches schemas/check-report.schema.json.
 */
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Ajv } from 'ajv'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { install } from '../../src/core/stores/migrate.js'
import { GithubEmulator } from '../emulators/github.js'
import { S3Emulator } from '../emulators/s3.js'
import { SendgridEmulator } from '../emulators/sendgrid.js'
import { SlackEmulator } from '../emulators/slack.js'
import { StripeEmulator } from '../emulators/stripe.js'
import { assertCliBuilt, interlock, type Run } from '../helpers/cli.js'
import { tempRepo, type TempRepo } from '../helpers/git-repo.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'

interface Row {
  id: string
  family: string
  status: 'pass' | 'warn' | 'fail'
  detail: string
  fix?: string
}

const stripe = new StripeEmulator()
const github = new GithubEmulator()
const s3 = new S3Emulator()
const sendgrid = new SendgridEmulator()
const slack = new SlackEmulator()
let db: TestDatabase
let repo: TempRepo
let env: Record<string, string>
let relayKey: string
const alice = generateKeyPair('operator', 'alice').publicKey
const bob = generateKeyPair('operator', 'bob').publicKey
const validate = new Ajv({ strict: false }).compile(JSON.parse(readFileSync(join(import.meta.dirname, '../../schemas/check-report.schema.json'), 'utf8')))

beforeAll(async () => {
  assertCliBuilt()
  await Promise.all([stripe.start(), github.start(), s3.start(), sendgrid.start(), slack.start()])
  s3.createBucket('effects')
  db = await createTestDatabase()
  const admin = new pg.Client({ connectionString: db.url })
  await admin.connect()
  await admin.query(`
    CREATE TABLE orders (id bigserial PRIMARY KEY, effect_id text NOT NULL UNIQUE, order_id text NOT NULL);
    CREATE TABLE loose (id bigserial PRIMARY KEY, effect_id text NOT NULL, order_id text NOT NULL);`)
  await install({ kind: 'postgres', url: db.url, schema: 'interlock' })
  // A store one migration behind this binary: as if installed by the previous release.
  await install({ kind: 'postgres', url: db.url, schema: 'behind' })
  await admin.query('DELETE FROM behind.schema_migrations WHERE version = (SELECT max(version) FROM behind.schema_migrations)')
  await admin.end()
  repo = await tempRepo({ 'README.md': 'hello\n' })
  relayKey = join(mkdtempSync(join(tmpdir(), 'interlock-relay-key-')), 'relay.key')
  writeKeyFile(relayKey, generateKeyPair('relay', 'relay-1'))
  env = {
    INTERLOCK_DATABASE_URL: db.url,
    ORDERS_DATABASE_URL: db.url,
    STRIPE_API_KEY: stripe.apiKey,
    GITHUB_TOKEN: github.token,
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    SENDGRID_API_KEY: sendgrid.apiKey,
    SLACK_TOKEN: slack.token,
  }
})

afterAll(async () => {
  await Promise.all([stripe.close(), github.close(), s3.close(), sendgrid.close(), slack.close()])
  await db?.drop()
  repo?.cleanup()
})

interface Parts {
  schema?: string
  stripeUrl?: string
  table?: string
  quorum?: number
  ruleTarget?: string
  relayKey?: string
  extra?: string
}

function config(p: Parts = {}): string {
  return `
[store]
kind = "postgres"
url = "\${INTERLOCK_DATABASE_URL}"
schema = "${p.schema ?? 'interlock'}"

[relay]
key = "${p.relayKey ?? relayKey}"

[targets.refunds]
type = "stripe"
api_key = "\${STRIPE_API_KEY}"
base_url = "${p.stripeUrl ?? stripe.url}"

[targets.merges]
type = "github"
token = "\${GITHUB_TOKEN}"
owner = "${github.owner}"
repo = "${github.repo}"
base_url = "${github.url}"

[targets.objects]
type = "s3"
bucket = "effects"
region = "${s3.region}"
access_key_id = "\${AWS_ACCESS_KEY_ID}"
secret_access_key = "\${AWS_SECRET_ACCESS_KEY}"
endpoint = "${s3.url}"
path_style = true

[targets.mail]
type = "sendgrid"
api_key = "\${SENDGRID_API_KEY}"
base_url = "${sendgrid.url}"

[targets.chat]
type = "slack"
token = "\${SLACK_TOKEN}"
base_url = "${slack.url}"

[targets.orders]
type = "postgres_row"
url = "\${ORDERS_DATABASE_URL}"
table = "${p.table ?? 'orders'}"
columns = { order_id = "order_id" }

[targets.docs]
type = "repo"
path = "${repo.path}"

[[operators]]
name = "alice"
public_key = "${alice}"

[[operators]]
name = "bob"
public_key = "${bob}"

[[policy.rules]]
name = "big-refunds"
target = "${p.ruleTarget ?? 'refunds'}"
action = "refund"
quorum = ${p.quorum ?? 2}
${p.extra ?? ''}`
}

async function check(text: string, args: string[] = [], extraEnv: Record<string, string> = {}): Promise<{ run: Run; rows: Row[]; report: Record<string, unknown> }> {
  const cwd = mkdtempSync(join(tmpdir(), 'interlock-check-'))
  writeFileSync(join(cwd, 'interlock.toml'), text)
  const timeout = args.includes('--timeout') ? [] : ['--timeout', '3000']
  const run = await interlock(['check', '--json', ...timeout, ...args], { cwd, env: { ...env, ...extraEnv } })
  let report: Record<string, unknown>
  try {
    report = JSON.parse(run.stdout) as Record<string, unknown>
  } catch {
    throw new Error(`not JSON (exit ${run.code}):\n${run.stdout}\n${run.stderr}`)
  }
  expect(validate(report), JSON.stringify(validate.errors)).toBe(true)
  return { run, rows: report.checks as Row[], report }
}

function failing(rows: Row[]): string[] {
  return rows.filter((r) => r.status === 'fail').map((r) => r.id)
}

describe('interlock check', () => {
  it('passes a healthy setup: every target probed read-only, exit 0', async () => {
    const before = { stripe: stripe.requests.length, github: github.requests.length }
    const { run, rows, report } = await check(config())
    expect(failing(rows)).toEqual([])
    expect(run.code).toBe(0)
    expect(run.stderr).toBe('')
    expect(report.ok).toBe(true)
    for (const t of ['refunds', 'merges', 'objects', 'mail', 'chat', 'orders', 'docs']) {
      for (const what of ['credentials', 'reachable', 'tier']) expect(rows.find((r) => r.id === `targets.${t}.${what}`)?.status, `targets.${t}.${what}`).toBe('pass')
    }
    expect(rows.find((r) => r.id === 'store.schema')?.status).toBe('pass')
    expect(rows.find((r) => r.id === 'policy.quorum')?.status).toBe('pass')
    expect(rows.find((r) => r.id === 'policy.rules.big-refunds')?.status).toBe('pass')
    expect(rows.find((r) => r.id === 'keys.relay')?.status).toBe('pass')
    expect(rows.find((r) => r.id === 'keys.operators')?.status).toBe('pass')
    // Read-only: the probes asked, and nothing was applied anywhere.
    expect(stripe.requests.slice(before.stripe)).toEqual([{ method: 'GET', path: '/v1/balance' }])
    expect(github.requests.slice(before.github).map((r) => r.method)).toEqual(['GET', 'GET'])
    expect([stripe, github, s3, sendgrid, slack].map((e) => e.applications.size)).toEqual([0, 0, 0, 0, 0])
  })

  it('prints a table for people, with the fix for each failure', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-check-'))
    writeFileSync(join(cwd, 'interlock.toml'), config({ table: 'loose' }))
    const run = await interlock(['check'], { cwd, env })
    expect(run.code).toBe(1)
    expect(run.stderr).toBe('')
    expect(run.stdout).toMatch(/FAIL\s+targets\.orders\.tier\s+.*no unique constraint on effect_id.*ADD UNIQUE/)
    expect(run.stdout).toMatch(/\d+ passed, \d+ warned, 1 failed/)
    expect(run.stdout).not.toContain(stripe.apiKey)
  })

  it('fails a tier-2 PostgreSQL target whose effect id column has no unique constraint', async () => {
    const { run, rows } = await check(config({ table: 'loose' }))
    expect(failing(rows)).toEqual(['targets.orders.tier'])
    expect(rows.find((r) => r.id === 'targets.orders.reachable')?.status).toBe('pass')
    expect(run.code).toBe(1)
  })

  it('fails a store one schema version behind, with `interlock install` as the fix', async () => {
    const { run, rows } = await check(config({ schema: 'behind' }), ['--only', 'store'])
    const row = rows.find((r) => r.id === 'store.schema')!
    expect(row.status).toBe('fail')
    expect(row.detail).toMatch(/is at schema version \d+; this interlock needs \d+/)
    expect(row.fix).toContain('interlock install')
    expect(failing(rows)).toEqual(['store.schema'])
    expect(rows.some((r) => r.family === 'targets')).toBe(false)
    expect(run.code).toBe(1)
  })

  it('fails a store with no schema installed', async () => {
    const { rows } = await check(config({ schema: 'nothing_here' }), ['--only', 'store'])
    // PostgreSQL is never installed by opening it: the fix is `interlock install`, as the relay's refusal says.
    expect(rows.find((r) => r.id === 'store.schema')).toMatchObject({ status: 'fail', detail: expect.stringContaining('no Interlock schema installed'), fix: expect.stringMatching(/^Run `interlock install`/) })
  })

  it('fails an unreachable target, within the probe timeout', async () => {
    const started = Date.now()
    const { run, rows } = await check(config({ stripeUrl: 'http://127.0.0.1:9' }), ['--only', 'targets'])
    expect(failing(rows)).toEqual(['targets.refunds.reachable'])
    expect(rows.find((r) => r.id === 'targets.refunds.reachable')!.detail).toMatch(/could not connect|ECONNREFUSED/)
    expect(run.code).toBe(1)
    expect(Date.now() - started).toBeLessThan(20_000)
  })

  it('fails a target that never answers after --timeout', async () => {
    // A server that accepts the connection and never answers.
    const silent = (await import('node:net')).createServer(() => {})
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    try {
      const port = (silent.address() as { port: number }).port
      const { rows } = await check(config({ stripeUrl: `http://127.0.0.1:${port}` }), ['--only', 'targets', '--timeout', '500'])
      expect(rows.find((r) => r.id === 'targets.refunds.reachable')).toMatchObject({ status: 'fail' })
      expect(rows.find((r) => r.id === 'targets.refunds.reachable')!.detail).toMatch(/500 ms|timed out|timeout/i)
    } finally {
      silent.close()
    }
  })

  it('fails bad credentials on the credentials check, naming no secret', async () => {
    const wrong = { STRIPE_API_KEY: 'sk_test_wrong_key_0000000000', SLACK_TOKEN: 'xoxb-wrong', GITHUB_TOKEN: 'ghp_wrong', SENDGRID_API_KEY: 'SG.wrong', AWS_SECRET_ACCESS_KEY: 'wrongSecret/000' }
    const { run, rows } = await check(config(), ['--only', 'targets'], wrong)
    expect(failing(rows).sort()).toEqual(['targets.chat.credentials', 'targets.mail.credentials', 'targets.merges.credentials', 'targets.objects.credentials', 'targets.refunds.credentials'])
    expect(run.code).toBe(1)
    for (const secret of Object.values(wrong)) expect(run.stdout).not.toContain(secret)
  })

  it('fails a credential whose variable is not set, and still checks the rest', async () => {
    const { rows } = await check(config(), ['--only', 'targets'], { SLACK_TOKEN: '' })
    expect(failing(rows)).toEqual(['targets.chat.credentials'])
    expect(rows.find((r) => r.id === 'targets.chat.credentials')!.detail).toContain('SLACK_TOKEN is not set')
    expect(rows.find((r) => r.id === 'targets.refunds.reachable')?.status).toBe('pass')
  })

  it('fails a SendGrid key without the scopes the target needs, and a GitHub token that may not push', async () => {
    sendgrid.scopes = ['mail.send']
    github.permissions = { ...github.permissions, push: false }
    try {
      const { rows } = await check(config(), ['--only', 'targets'])
      expect(failing(rows).sort()).toEqual(['targets.mail.reachable', 'targets.merges.reachable'])
      expect(rows.find((r) => r.id === 'targets.mail.reachable')!.detail).toContain('asm.suppressions.global.read')
    } finally {
      sendgrid.scopes = ['mail.send', 'asm.suppressions.global.read']
      github.permissions = { ...github.permissions, push: true }
    }
  })

  it('fails S3 keys without s3:ListBucket on the tier: HeadObject would answer 403 for a missing object, and recovery could not tell', async () => {
    s3.deny('s3:ListBucket')
    try {
      const { run, rows } = await check(config(), ['--only', 'targets'])
      expect(failing(rows)).toEqual(['targets.objects.tier'])
      const row = rows.find((r) => r.id === 'targets.objects.tier')!
      expect(row.detail).toContain('without s3:ListBucket')
      expect(row.fix).toContain('s3:ListBucket')
      expect(rows.find((r) => r.id === 'targets.objects.credentials')?.status).toBe('pass')
      expect(run.code).toBe(1)
    } finally {
      s3.denied.clear()
    }
  })

  it('fails a missing bucket', async () => {
    const { rows } = await check(config().replace('bucket = "effects"', 'bucket = "no-such-bucket"'), ['--only', 'targets'])
    expect(failing(rows)).toEqual(['targets.objects.reachable'])
  })

  it('fails a policy rule naming a missing target', async () => {
    const { run, rows } = await check(config({ ruleTarget: 'refundz' }), ['--only', 'policy'])
    expect(failing(rows)).toEqual(['policy.rules.big-refunds'])
    expect(rows.find((r) => r.id === 'policy.rules.big-refunds')!.detail).toContain('there is no target "refundz"')
    // A mistake in interlock.toml itself: exit 3, as for a config error, not 1 (staging failing).
    expect(run.code).toBe(3)
  })

  it('fails a policy rule naming an action its target does not have', async () => {
    const { run, rows } = await check(config().replace('action = "refund"', 'action = "charge"'), ['--only', 'policy'])
    expect(failing(rows)).toEqual(['policy.rules.big-refunds'])
    expect(run.code).toBe(3)
  })

  it('fails a quorum larger than the operators', async () => {
    const { run, rows } = await check(config({ quorum: 3 }), ['--only', 'policy'])
    expect(failing(rows)).toEqual(['policy.quorum'])
    expect(rows.find((r) => r.id === 'policy.quorum')!.detail).toContain('3 operators are needed but 2 are declared')
    expect(run.code).toBe(3)
  })

  it('fails an operator public key that does not parse', async () => {
    // 43 base64url characters whose last one carries bits beyond the 32 bytes: the schema's pattern passes it, the key parser does not.
    const { run, rows } = await check(config().replace(bob, `ed25519:${'A'.repeat(42)}B`), ['--only', 'keys'])
    expect(failing(rows)).toEqual(['keys.operators'])
    expect(run.code).toBe(3)
    const malformed = await check(config().replace(bob, 'ed25519:short'), ['--only', 'keys'])
    expect(failing(malformed.rows)).toEqual(['keys.operators'])
  })

  it('fails a relay key readable by group or others', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-relay-key-'))
    const key = join(dir, 'relay.key')
    writeKeyFile(key, generateKeyPair('relay', 'relay-2'))
    chmodSync(key, 0o644)
    const { run, rows } = await check(config({ relayKey: key }), ['--only', 'keys'])
    expect(failing(rows)).toEqual(['keys.relay'])
    expect(rows.find((r) => r.id === 'keys.relay')!.detail).toContain('mode 644')
    expect(rows.find((r) => r.id === 'keys.relay')!.fix).toContain(`chmod 600 ${key}`)
    expect(run.code).toBe(1)
  })

  it('lists every schema problem with its key path, and checks nothing further', async () => {
    const { run, rows } = await check(config().replace('path_style = true', 'path_style = "yes"').replace('[store]', '[store]\npathh = 1'))
    expect(failing(rows)).toEqual(['config.schema', 'config.schema'])
    expect(rows.map((r) => r.detail).join('\n')).toMatch(/targets\.objects\.path_style: must be true or false/)
    expect(rows.some((r) => r.family !== 'config')).toBe(false)
    expect(run.code).toBe(3)
  })

  it('fails when there is no config file', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-check-'))
    const run = await interlock(['check', '--json'], { cwd, env })
    expect(run.code).toBe(3)
    const report = JSON.parse(run.stdout) as { checks: Row[]; config: null }
    expect(validate(report)).toBe(true)
    expect(report.config).toBeNull()
    expect(report.checks.map((r) => r.id)).toEqual(['config.file'])
  })

  it('refuses an unknown --only family as a usage error (exit 2)', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-check-'))
    const run = await interlock(['check', '--only', 'everything'], { cwd, env })
    expect(run.code).toBe(2)
  })
})
