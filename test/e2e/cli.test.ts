/**
 * The built binary, run as a user runs it: `node bin/run.js ...` in a fresh
 * folder, judged only by exit code, stdout and stderr.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'

const SECRET = 'sk_live_e2e_Zq81xv'

function folder(config?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-e2e-'))
  if (config !== undefined) writeFileSync(join(dir, 'interlock.toml'), config)
  return dir
}

const GOOD = `
[store]
path = "journal.db"

[targets.payments]
type = "http"
tier = 1
url = "https://payments.example.com/v1/refunds"
headers = { Authorization = "Bearer \${PAYMENTS_TOKEN}" }

[targets.docs]
type = "repo"
path = "docs"
`

const BAD = `
[store]
pathh = "journal.db"

[targets.payments]
type = "http"
tier = 7
url = "https://payments.example.com/v1/refunds"
`

beforeAll(assertCliBuilt)

describe('interlock config show', () => {
  it('prints the config for people and exits 0', async () => {
    const cwd = folder(GOOD)
    const run = await interlock(['config', 'show'], { cwd, env: { PAYMENTS_TOKEN: SECRET } })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain(join(cwd, 'journal.db'))
    expect(run.stdout).toMatch(/payments\s+http\s+1\s+https:\/\/payments\.example\.com/)
    expect(run.stdout).toContain('Bearer ***')
  })

  it('prints every section in effect: operators, policy rules, reconcile and relay, defaults included', async () => {
    const key = generateKeyPair('operator', 'alice').publicKey
    const cwd = folder(`${GOOD}
[[operators]]
name = "alice"
public_key = "${key}"

[[policy.rules]]
name = "big-refunds"
target = "payments"
action = "refund"
quorum = 1
release_ttl = "15m"
when = [{ arg = "amount", above = "500.00", currency = "EUR" }]

[reconcile]
older_than = "90s"

[relay]
id = "relay-1"
key = "relay.key"
health_port = 9464
log_format = "json"
heartbeat_retention = "2d"
`)
    const run = await interlock(['config', 'show'], { cwd, env: { PAYMENTS_TOKEN: SECRET } })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(new RegExp(`^alice\\s+${key}$`, 'm'))
    expect(run.stdout).toMatch(/^big-refunds\s+payments\s+refund\s+any\s+amount > 500\.00 \(EUR only\)\s+1\s+15m$/m)
    expect(run.stdout).toMatch(/^older_than\s+90s$/m)
    expect(run.stdout).toMatch(/^concurrency\s+4$/m)
    expect(run.stdout).toMatch(/^id\s+relay-1$/m)
    expect(run.stdout).toContain(join(cwd, 'relay.key'))
    expect(run.stdout).toMatch(/^lease_ms\s+30000$/m)
    expect(run.stdout).toMatch(/^health_port\s+9464$/m)
    expect(run.stdout).toMatch(/^log_format\s+json$/m)
    expect(run.stdout).toMatch(/^heartbeat_retention\s+2d$/m)

    // With none of them in the file, each section still says what is in effect.
    const bare = await interlock(['config', 'show'], { cwd: folder('') })
    expect(bare.code, bare.stderr).toBe(0)
    for (const line of ['No operators: nobody can release, deny or resolve an effect.', 'No policy rules: no effect waits for operators.']) expect(bare.stdout).toContain(line)
    expect(bare.stdout).toMatch(/^older_than\s+5m$/m)
    expect(bare.stdout).toMatch(/^key\s+none \(interlock relay needs --key\)$/m)
    expect(bare.stdout).toMatch(/^poll_ms\s+1000$/m)
    expect(bare.stdout).toMatch(/^log_format\s+text$/m)
    expect(bare.stdout).toMatch(/^stall_ms\s+20000$/m)
    expect(bare.stdout).toMatch(/^heartbeat_retention\s+7d$/m)
  })

  it('a PostgreSQL store shows the limits set on its connections, defaults included', async () => {
    const cwd = folder('[store]\nkind = "postgres"\nurl = "postgres://relay@db.example/app"\nlock_timeout_ms = 0\n')
    const run = await interlock(['config', 'show'], { cwd })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/^statement_timeout_ms\s+15000$/m)
    expect(run.stdout).toMatch(/^lock_timeout_ms\s+0$/m)
    expect(run.stdout).toMatch(/^idle_in_transaction_timeout_ms\s+10000$/m)
  })

  it('--json prints the typed config', async () => {
    const cwd = folder(GOOD)
    const run = await interlock(['config', 'show', '--json'], { cwd, env: { PAYMENTS_TOKEN: SECRET } })
    expect(run.code).toBe(0)
    const config = JSON.parse(run.stdout)
    expect(config.store).toEqual({ kind: 'sqlite', path: join(cwd, 'journal.db') })
    expect(config.targets.payments).toMatchObject({ type: 'http', tier: 1, method: 'POST', timeoutMs: 10000 })
    expect(config.targets.payments.headers.Authorization).toBe('Bearer ***')
    expect(config.targets.docs).toEqual({
      type: 'repo',
      path: join(cwd, 'docs'),
      branch: 'main',
      author: 'Interlock <interlock@localhost>',
    })
  })

  it('never shows a secret from the environment, in any mode', async () => {
    const cwd = folder(GOOD)
    for (const args of [['config', 'show'], ['config', 'show', '--json']]) {
      const run = await interlock(args, { cwd, env: { PAYMENTS_TOKEN: SECRET, INTERLOCK_DEBUG: '1' } })
      expect(run.code).toBe(0)
      expect(run.stdout + run.stderr).not.toContain(SECRET)
    }
  })

  it('reads the file named by --config or INTERLOCK_CONFIG', async () => {
    const cwd = folder()
    writeFileSync(join(cwd, 'other.toml'), '[gate]\nmax_attempts = 9\n')
    const byFlag = await interlock(['config', 'show', '--json', '--config', 'other.toml'], { cwd })
    const byEnv = await interlock(['config', 'show', '--json'], { cwd, env: { INTERLOCK_CONFIG: 'other.toml' } })
    expect(JSON.parse(byFlag.stdout).gate.maxAttempts).toBe(9)
    expect(JSON.parse(byEnv.stdout).gate.maxAttempts).toBe(9)
  })

  it('with no config file shows the embedded default', async () => {
    const cwd = folder()
    const run = await interlock(['config', 'show', '--json'], { cwd })
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ store: { kind: 'sqlite', path: join(cwd, 'interlock.db') }, targets: {} })
  })

  it('--help has a description and examples', async () => {
    const run = await interlock(['config', 'show', '--help'], { cwd: folder() })
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('DESCRIPTION')
    expect(run.stdout).toContain('$ interlock config show --json')
    expect(run.stdout).toContain('INTERLOCK_CONFIG')
  })
})

describe('errors and exit codes', () => {
  it('a bad config exits 3, names every key path on stderr, and shows no stack trace', async () => {
    const run = await interlock(['config', 'show'], { cwd: folder(BAD) })
    expect(run.code).toBe(3)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain('Error (E_CONFIG): interlock.toml is invalid: 2 problems')
    expect(run.stderr).toContain('store.pathh: unknown key')
    expect(run.stderr).toContain('targets.payments.tier: must be 1, 2 or 3')
    expect(run.stderr).toContain('Try this: ')
    expect(run.stderr).not.toContain('    at ')
  })

  it('a TOML syntax error exits 3 with the line', async () => {
    const run = await interlock(['config', 'show'], { cwd: folder('[store\n') })
    expect(run.code).toBe(3)
    expect(run.stderr).toMatch(/interlock\.toml:1:\d+: TOML syntax error/)
    expect(run.stderr).not.toContain('    at ')
  })

  it('--json with a bad config prints the JSON error envelope and exits 3', async () => {
    const run = await interlock(['config', 'show', '--json'], { cwd: folder(BAD) })
    expect(run.code).toBe(3)
    const { error } = JSON.parse(run.stdout)
    expect(error).toMatchObject({ code: 'E_CONFIG', exitCode: 3, context: { file: expect.any(String) } })
    expect(error.hint).toMatch(/interlock\.toml\.example/)
    expect(error.problems).toEqual(['store.pathh: unknown key (did you mean "path"?)', 'targets.payments.tier: must be 1, 2 or 3'])
    expect(run.stdout + run.stderr).not.toContain('    at ')
  })

  it('a missing secret exits 3 naming the key and the variable where the target is made; config show only warns', async () => {
    const cwd = folder(GOOD)
    const run = await interlock(['outbox', 'submit', '--target', 'payments', '--action', 'refund'], { cwd })
    expect(run.code).toBe(3)
    expect(run.stderr).toContain('targets.payments.headers.Authorization: environment variable PAYMENTS_TOKEN is not set')
    // Reading the config makes no target: shown, with the unset variable said on stderr.
    const shown = await interlock(['config', 'show'], { cwd })
    expect(shown.code).toBe(0)
    expect(shown.stderr).toContain('targets.payments.headers.Authorization: environment variable PAYMENTS_TOKEN is not set')
  })

  it('a --config file that does not exist exits 3', async () => {
    const run = await interlock(['config', 'show', '--config', 'missing.toml'], { cwd: folder() })
    expect(run.code).toBe(3)
    expect(run.stderr).toContain('config file missing.toml not found')
  })

  it('an unknown flag exits 2 with a clear message, with and without --json', async () => {
    const cwd = folder(GOOD)
    const human = await interlock(['config', 'show', '--frobnicate'], { cwd })
    expect(human.code).toBe(2)
    expect(human.stderr).toContain('Error (E_USAGE): unknown flag --frobnicate for `interlock config show`')
    expect(human.stderr).toContain('interlock config show --help')
    expect(human.stderr).not.toContain('    at ')

    const machine = await interlock(['config', 'show', '--json', '--frobnicate'], { cwd })
    expect(machine.code).toBe(2)
    expect(JSON.parse(machine.stdout).error).toMatchObject({ code: 'E_USAGE', exitCode: 2 })
  })

  it('an unknown command or extra argument exits 2, as a usage error with a hint', async () => {
    for (const args of [['frobnicate'], ['config', 'show', 'extra']]) {
      const run = await interlock(args, { cwd: folder(GOOD) })
      expect(run.code).toBe(2)
      expect(run.stderr).toMatch(/^Error \(E_USAGE\): (unknown command|unexpected argument) .*\nTry this: /)
      expect(run.stderr).not.toContain('    at ')
    }
  })
})
