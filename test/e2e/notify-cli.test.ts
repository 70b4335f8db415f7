/**
 * [[notify]] through the built binary: `interlock check` lists each rule and
 * its channel, fails (exit 3, a mistake in the file) a rule whose notices
 * its channel would refuse, and probes the channels as targets;
 * `interlock reconcile-effects` tells what waits (an inline gate has no
 * relay: cron's reconcile run is what notifies), once however often it runs.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { openInterlock } from '../../src/core/interlock.js'
import { NOTIFY_THREAD } from '../../src/core/notify/events.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { SlackEmulator } from '../emulators/slack.js'
import { StripeEmulator } from '../emulators/stripe.js'

const STRIPE_KEY = 'sk_test_51NotifyCliKeyThatMustNeverLeak'
let slack: SlackEmulator
let stripe: StripeEmulator
const dirs: string[] = []

beforeAll(async () => {
  assertCliBuilt()
  slack = await new SlackEmulator().start()
  slack.seedChannel({ id: 'C0OPS', name: 'ops' })
  stripe = await new StripeEmulator(STRIPE_KEY).start()
  stripe.seedCharge({ id: 'ch_cli', amount: 900_000, currency: 'usd' })
})
afterAll(async () => {
  await slack.close()
  await stripe.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function project(notify: string): { dir: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-notify-cli-'))
  dirs.push(dir)
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]
path = "journal.db"

[targets.payments]
type = "stripe"
api_key = "\${STRIPE_API_KEY}"
base_url = "${stripe.url}"

[targets.ops]
type = "slack"
token = "\${SLACK_TOKEN}"
base_url = "${slack.url}"

[targets.mail]
type = "sendgrid"
api_key = "\${SENDGRID_API_KEY}"
base_url = "http://127.0.0.1:9"

[[operators]]
name = "alice"
public_key = "${generateKeyPair('operator', 'alice').publicKey}"

[[policy.rules]]
name = "big-refunds"
target = "payments"
when = [{ arg = "amount", above = "1000" }]

${notify}`,
  )
  return { dir, env: { STRIPE_API_KEY: STRIPE_KEY, SLACK_TOKEN: slack.token, SENDGRID_API_KEY: 'SG.notify-cli-key-never-shown' } }
}

interface Row {
  id: string
  status: string
  detail: string
}

describe('interlock check on [[notify]]', () => {
  it('lists each rule and where it tells; a rule whose notices its channel refuses fails as a mistake in the file (exit 3)', async () => {
    const good = project(`[[notify]]\nname = "holds"\non = ["held", "release"]\nchannel = "ops"\nslack_channel = "C0OPS"\n`)
    const ok = await interlock(['check', '--only', 'notify', '--only', 'targets', '--json'], { cwd: good.dir, env: good.env })
    const rows = (JSON.parse(ok.stdout) as { checks: Row[] }).checks
    expect(rows.find((r) => r.id === 'notify.holds')).toMatchObject({ status: 'pass', detail: 'slack C0OPS, grouped per 60 s' })
    // The channel is a target: probed read-only like any.
    expect(rows.find((r) => r.id === 'targets.ops.reachable')?.status).toBe('pass')

    const bad = project(`[[notify]]\nname = "mail-holds"\non = ["held"]\nchannel = "mail"\nto = ["ops@shop.example"]\nfrom = "not an address"\n`)
    const run = await interlock(['check', '--only', 'notify', '--json'], { cwd: bad.dir, env: bad.env })
    expect(run.code).toBe(3)
    const row = (JSON.parse(run.stdout) as { checks: Row[] }).checks.find((r) => r.id === 'notify.mail-holds')
    expect(row).toMatchObject({ status: 'fail' })
    expect(row!.detail).toContain('a notice this rule makes is refused by mail')
    expect(run.stdout).not.toContain('SG.notify-cli-key-never-shown')
  })

  it('a rule naming a channel that cannot take notices is refused at load, naming the key (exit 3)', async () => {
    const p = project(`[[notify]]\non = ["held"]\nchannel = "payments"\n`)
    const run = await interlock(['check'], { cwd: p.dir, env: p.env })
    expect(run.code).toBe(3)
    expect(run.stdout + run.stderr).toContain('notify[0].channel: [targets.payments] is of type "stripe"; notices go to a target of type "slack", "sendgrid", "webhook"')
  })
})

describe('interlock reconcile-effects tells what waits', () => {
  it('an effect an inline gate held is told in Slack by the reconcile run, once however often it runs', async () => {
    const p = project(`[[notify]]\nname = "holds"\non = ["held"]\nchannel = "ops"\nslack_channel = "C0OPS"\nwindow = "0s"\n`)
    const lib = await openInterlock({ cwd: p.dir, env: p.env })
    let id: string
    try {
      const outcome = await lib.gate.submit({ thread: 'agent-9', target: 'payments', action: 'refund', args: { charge: 'ch_cli', amount: '2500.00', currency: 'usd' } })
      expect(outcome.status).toBe('held')
      id = outcome.effectId
    } finally {
      await lib.close()
    }
    for (let i = 0; i < 2; i++) {
      const run = await interlock(['reconcile-effects', '--json'], { cwd: p.dir, env: p.env })
      expect(run.code, run.stderr).toBe(0)
      expect((JSON.parse(run.stdout) as { notified: { proposed: number } }).notified.proposed).toBe(i === 0 ? 1 : 0)
    }
    const told = [...slack.messages.values()].filter((m) => m.text?.includes(`interlock outbox release ${id}`))
    expect(told).toHaveLength(1)
    // A notice is an effect like any: `outbox verify` covers its records.
    const verify = await interlock(['outbox', 'verify', '--json'], { cwd: p.dir, env: p.env })
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    const after = await openInterlock({ cwd: p.dir, env: p.env })
    try {
      expect((await after.store.list({ thread: NOTIFY_THREAD })).map((n) => n.state)).toEqual(['COMMITTED'])
    } finally {
      await after.close()
    }
  })
})
