/**
 * `notary = "<url>"` on a target that cannot carry it, through the binary as
 * a user runs it: `interlock check` reports it as a failing row with the
 * hint, and any other command refuses the file with exit 3 (a ConfigError),
 * naming the file, the target and the key, with no stack trace.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'

let dir = ''
beforeAll(() => {
  assertCliBuilt()
  dir = mkdtempSync(join(tmpdir(), 'interlock-notary-targets-'))
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[targets.pay]\ntype = "stripe"\napi_key = "\${STRIPE_KEY}"\nnotary = "http://127.0.0.1:7311"\n\n[targets.orders]\ntype = "postgres_row"\nurl = "postgres://db.example/shop"\ntable = "orders"\nnotary = "http://127.0.0.1:7311"\n`,
  )
})
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const env = { STRIPE_KEY: 'sk_test_0123456789abcdef' }
const STACK = /^\s+at /m

describe('a config with notary on a stripe and a postgres_row target', () => {
  it('interlock check: one failing row per target naming the key, whose fix says which targets take notary; exit 3', async () => {
    const run = await interlock(['check', '--json'], { cwd: dir, env })
    expect(run.code, run.stderr).toBe(3)
    const report = JSON.parse(run.stdout) as { checks: { id: string; status: string; detail: string; fix?: string }[] }
    const rows = report.checks.filter((c) => c.id === 'config.schema')
    expect(rows.map((r) => [r.status, r.detail])).toEqual([
      ['fail', 'targets.pay.notary: not taken by a stripe target: only an http target with tier = 3 takes notary (its service records performed at the notary itself)'],
      ['fail', 'targets.orders.notary: not taken by a postgres_row target: only an http target with tier = 3 takes notary (its service records performed at the notary itself)'],
    ])
    expect(rows[0]!.fix).toContain('Remove notary (and notary_services) from [targets.pay]')
    expect(rows[1]!.fix).toContain('Remove notary (and notary_services) from [targets.orders]')
    expect(rows[0]!.fix).toContain('only by an http target with tier = 3')
    const human = await interlock(['check'], { cwd: dir, env })
    expect(human.code).toBe(3)
    expect(human.stdout).toContain('targets.pay.notary: not taken by a stripe target')
    expect(human.stdout + human.stderr).not.toMatch(STACK)
  })

  it('interlock outbox status refuses the file: E_CONFIG, exit 3, the file, both keys and the hint, no stack trace', async () => {
    const run = await interlock(['outbox', 'status'], { cwd: dir, env })
    expect(run.code).toBe(3)
    expect(run.stderr).toContain('Error (E_CONFIG): interlock.toml is invalid: 2 problems')
    expect(run.stderr).toContain('  - targets.pay.notary: not taken by a stripe target')
    expect(run.stderr).toContain('  - targets.orders.notary: not taken by a postgres_row target')
    expect(run.stderr).toContain('Try this: Remove notary (and notary_services) from [targets.pay], [targets.orders].')
    expect(run.stderr).not.toMatch(STACK)
    const json = await interlock(['outbox', 'status', '--json'], { cwd: dir, env })
    expect(json.code).toBe(3)
    const { error } = JSON.parse(json.stdout) as { error: { code: string; exitCode: number; problems: string[]; hint: string; context: { file: string } } }
    expect(error).toMatchObject({ code: 'E_CONFIG', exitCode: 3, context: { file: join(dir, 'interlock.toml') } })
    expect(error.problems).toHaveLength(2)
    expect(error.hint).toContain('sendgrid, slack and mcp reach services that never write to a notary')
  })
})
