/**
 * `interlock init` as a user runs it: the file it writes is valid, refuses to
 * be overwritten without --force, and, once its placeholders are filled in
 * the way an operator points a file at staging (base_url, endpoint, owner,
 * repo), passes `interlock check` against the emulators and a real PostgreSQL.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { initPlaceholders, initTemplate } from '../../src/core/config/init-template.js'
import { TARGET_TYPES } from '../../src/core/targets/registry.js'
import { install } from '../../src/core/stores/migrate.js'
import { GithubEmulator } from '../emulators/github.js'
import { S3Emulator } from '../emulators/s3.js'
import { SendgridEmulator } from '../emulators/sendgrid.js'
import { SlackEmulator } from '../emulators/slack.js'
import { StripeEmulator } from '../emulators/stripe.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { tempRepo } from '../helpers/git-repo.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'

const stripe = new StripeEmulator()
const github = new GithubEmulator()
const s3 = new S3Emulator(undefined, undefined, 'us-east-1')
const sendgrid = new SendgridEmulator()
const slack = new SlackEmulator()
let db: TestDatabase

beforeAll(async () => {
  assertCliBuilt()
  await Promise.all([stripe.start(), github.start(), s3.start(), sendgrid.start(), slack.start()])
  s3.createBucket('effects')
  db = await createTestDatabase()
  const admin = new pg.Client({ connectionString: db.url })
  await admin.connect()
  // The table init's comment tells the DBA to create.
  await admin.query('CREATE TABLE effects (effect_id text NOT NULL UNIQUE, payload text)')
  await admin.end()
  await install({ kind: 'postgres', url: db.url, schema: 'interlock' })
})

afterAll(async () => {
  await Promise.all([stripe.close(), github.close(), s3.close(), sendgrid.close(), slack.close()])
  await db?.drop()
})

function folder(): string {
  return mkdtempSync(join(tmpdir(), 'interlock-init-'))
}

describe('interlock init', () => {
  it('writes a file that passes interlock check against the emulators once pointed at them', async () => {
    const cwd = folder()
    const targets = ['stripe:refunds', 'github', 's3', 'sendgrid', 'slack', 'postgres_row:orders', 'repo']
    const run = await interlock(['init', '--store', 'postgres', ...targets.flatMap((t) => ['--target', t])], { cwd })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('STRIPE_API_KEY')

    const file = join(cwd, 'interlock.toml')
    const staging = readFileSync(file, 'utf8')
      .replace('# base_url = "https://api.stripe.com"', `base_url = "${stripe.url}"`)
      .replace('# base_url = "https://api.github.com"', `base_url = "${github.url}"`)
      .replace('# base_url = "https://api.sendgrid.com"', `base_url = "${sendgrid.url}"`)
      .replace('# base_url = "https://slack.com"', `base_url = "${slack.url}"`)
      .replace('owner = "your-org"', `owner = "${github.owner}"`)
      .replace('repo = "your-repo"', `repo = "${github.repo}"`)
      .replace('bucket = "your-bucket"', 'bucket = "effects"')
      .replace('# endpoint = "https://s3.example.com"', `endpoint = "${s3.url}"`)
      .replace('# path_style = true', 'path_style = true')
    const repo = await tempRepo({ 'README.md': 'x\n' })
    writeFileSync(file, staging.replace('path = "./repo"', `path = "${repo.path}"`))

    const env = {
      INTERLOCK_DATABASE_URL: db.url,
      TARGET_DATABASE_URL: db.url,
      STRIPE_API_KEY: stripe.apiKey,
      GITHUB_TOKEN: github.token,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      SENDGRID_API_KEY: sendgrid.apiKey,
      SLACK_TOKEN: slack.token,
    }
    const check = await interlock(['check', '--json'], { cwd, env })
    const report = JSON.parse(check.stdout) as { ok: boolean; checks: { id: string; status: string; detail: string }[] }
    expect(report.checks.filter((c) => c.status === 'fail')).toEqual([])
    expect(check.code).toBe(0)
    expect(report.checks.filter((c) => c.id.endsWith('.reachable')).map((c) => c.id).sort()).toEqual(
      ['store.reachable', ...['github', 'orders', 'refunds', 'repo', 's3', 'sendgrid', 'slack'].map((t) => `targets.${t}.reachable`)].sort(),
    )
    repo.cleanup()
  })

  it('writes a sqlite file with no targets that check passes as it is', async () => {
    const cwd = folder()
    expect((await interlock(['init'], { cwd })).code).toBe(0)
    const check = await interlock(['check'], { cwd })
    expect(check.code).toBe(0)
    expect(check.stdout).toMatch(/WARN\s+store\.schema\s+.*does not exist yet/)
  })

  it('names the placeholders it wrote, and only when it wrote some', async () => {
    const bare = await interlock(['init', '--json'], { cwd: folder() })
    expect(bare.code, bare.stderr).toBe(0)
    expect(JSON.parse(bare.stdout).placeholders).toEqual([])
    const none = await interlock(['init'], { cwd: folder() })
    expect(none.stdout).not.toContain('placeholder')
    expect(none.stdout).toContain('No targets yet: add [targets.<name>] tables, or run `interlock init --force --target <type>`. Then run `interlock check`.')

    const credentialsOnly = await interlock(['init', '--target', 'stripe:refunds', '--target', 'slack'], { cwd: folder() })
    expect(credentialsOnly.stdout).not.toContain('placeholder')
    expect(credentialsOnly.stdout).toContain('Then run `interlock check`.')

    const cwd = folder()
    const some = await interlock(['init', '--target', 'github', '--target', 's3:objects', '--target', 'stripe'], { cwd })
    expect(some.stdout).toContain(
      'Then fill in the placeholders (targets.github.owner, targets.github.repo, targets.objects.bucket, targets.objects.region) and run `interlock check`.',
    )
  })

  it('every placeholder it names is a key its section writes with an example value', () => {
    for (const type of TARGET_TYPES) {
      const text = initTemplate('sqlite', [{ type, name: 'x' }])
      const section = text.slice(text.indexOf('[targets.x]'))
      for (const key of initPlaceholders([{ type, name: 'x' }])) {
        expect(section, `${type}: ${key}`).toMatch(new RegExp(`^${key.split('.').at(-1)} = \\S`, 'm'))
      }
    }
  })

  it('refuses to overwrite an existing file without --force (exit 6), and overwrites with it', async () => {
    const cwd = folder()
    writeFileSync(join(cwd, 'interlock.toml'), '# mine\n')
    const refused = await interlock(['init', '--target', 'slack'], { cwd })
    expect(refused.code).toBe(6)
    expect(refused.stderr).toContain('already exists; not overwriting it')
    expect(readFileSync(join(cwd, 'interlock.toml'), 'utf8')).toBe('# mine\n')
    const forced = await interlock(['init', '--target', 'slack', '--force'], { cwd })
    expect(forced.code).toBe(0)
    expect(readFileSync(join(cwd, 'interlock.toml'), 'utf8')).toContain('[targets.slack]')
  })

  it('writes where --path says, and refuses unknown types and duplicate names (exit 2)', async () => {
    const cwd = folder()
    expect((await interlock(['init', '--path', 'staging.toml', '--store', 'postgres'], { cwd })).code).toBe(0)
    expect(readFileSync(join(cwd, 'staging.toml'), 'utf8')).toContain('kind = "postgres"')
    expect((await interlock(['init', '--target', 'fax'], { cwd: folder() })).code).toBe(2)
    expect((await interlock(['init', '--target', 'stripe:a', '--target', 'slack:a'], { cwd: folder() })).code).toBe(2)
  })

  it('writes where --config or INTERLOCK_CONFIG says: the file every other command then reads', async () => {
    const cwd = folder()
    const byFlag = await interlock(['init', '--config', 'staging.toml', '--target', 'slack'], { cwd })
    expect(byFlag.code, byFlag.stderr).toBe(0)
    expect(byFlag.stdout).toContain('run `interlock check --config staging.toml`')
    expect(readFileSync(join(cwd, 'staging.toml'), 'utf8')).toContain('[targets.slack]')
    const shown = await interlock(['config', 'show', '--json', '--config', 'staging.toml'], { cwd, env: { SLACK_TOKEN: 'xoxb-e2e-token-1234' } })
    expect(shown.code, shown.stderr).toBe(0)
    expect(JSON.parse(shown.stdout)).toMatchObject({ file: join(cwd, 'staging.toml'), targets: { slack: { type: 'slack' } } })

    const env = { INTERLOCK_CONFIG: 'deploy.toml' }
    const byEnv = await interlock(['init', '--store', 'postgres'], { cwd, env })
    expect(byEnv.code, byEnv.stderr).toBe(0)
    expect(byEnv.stdout).toContain('run `interlock check`.')
    expect(readFileSync(join(cwd, 'deploy.toml'), 'utf8')).toContain('kind = "postgres"')
    // The same variable makes `init` refuse to overwrite the file it names.
    const again = await interlock(['init'], { cwd, env })
    expect(again.code).toBe(6)
    expect(again.stderr).toContain(`${join(cwd, 'deploy.toml')} already exists`)
    // --path, when given, is where it writes.
    expect((await interlock(['init', '--path', 'other.toml'], { cwd, env })).code).toBe(0)
    expect(readFileSync(join(cwd, 'other.toml'), 'utf8')).toContain('[store]')
  })

  it('with no interlock.toml, a command that needs one points at `interlock init`', async () => {
    const cwd = folder()
    const run = await interlock(['reconcile-effects'], { cwd })
    expect(run.code).toBe(3)
    expect(run.stderr).toContain(`Error (E_CONFIG): no interlock.toml in ${cwd}`)
    expect(run.stderr).toContain('Try this: Write one with `interlock init`')
    const asked = await interlock(['outbox', 'status', '--config', 'missing.toml'], { cwd })
    expect(asked.code).toBe(3)
    expect(asked.stderr).toContain('`interlock init` and the same --config or INTERLOCK_CONFIG')
  })

  it('every target type, on either store, makes a file the loader accepts, two of a type with their own variables', () => {
    for (const store of ['sqlite', 'postgres'] as const) {
      const targets = [...TARGET_TYPES.map((type) => ({ type, name: type })), { type: 'stripe' as const, name: 'payouts' }]
      const text = initTemplate(store, targets)
      const vars = [...new Set([...text.matchAll(/^[a-z_]+ = "\$\{([A-Z0-9_]+)\}"/gm)].map((m) => m[1]!))]
      expect(vars).toContain('PAYOUTS_STRIPE_API_KEY')
      const env = Object.fromEntries(vars.map((v) => [v, v.endsWith('DATABASE_URL') ? 'postgres://u:p@db.example/app' : `value-of-${v}`]))
      const config = parseConfig(text, { file: '/srv/app/interlock.toml', env })
      expect(Object.keys(config.targets).sort()).toEqual([...TARGET_TYPES, 'payouts'].sort())
      expect(config.store.kind).toBe(store)
    }
  })
})
