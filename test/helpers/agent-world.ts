/**
 * What an agent adapter's tests run against: a folder with interlock.toml
 * whose targets are the Stripe emulator (refunds, tier 1) and the Slack
 * emulator (posts, tier 3), optionally a policy rule holding refunds above
 * 100 and an operator whose key releases them through the CLI. The
 * emulators' ledgers are the truth the tests check, never the journal.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'vitest'
import { openInterlock, type Interlock } from '../../src/core/index.js'
import { SlackEmulator } from '../emulators/slack.js'
import { StripeEmulator } from '../emulators/stripe.js'
import { interlock as cli } from './cli.js'

export const CHANNEL = 'C0SUPPORT'

export interface AgentWorld {
  dir: string
  stripe: StripeEmulator
  slack: SlackEmulator
  /** The secrets interlock.toml names, for a process that opens it. */
  env: Record<string, string>
  open(): Promise<Interlock>
  /** `interlock outbox release <id>` as the operator alice. */
  release(effectId: string): Promise<void>
  /** Refunds Stripe made, in all. */
  refunds(): number
  /** The state the journal holds for every effect, by target. */
  journal(): Promise<{ effectId: string; target: string; state: string; thread: string }[]>
  close(): Promise<void>
}

export async function agentWorld(o: { holdAbove?: string } = {}): Promise<AgentWorld> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-agent-'))
  const stripe = await new StripeEmulator().start()
  const slack = await new SlackEmulator().start()
  stripe.seedCharge({ id: 'ch_1', amount: 50_000, currency: 'usd' })
  stripe.seedCharge({ id: 'ch_2', amount: 50_000, currency: 'usd' })
  slack.seedChannel({ id: CHANNEL, name: 'support' })
  const env = { STRIPE_API_KEY: stripe.apiKey, SLACK_TOKEN: slack.token }
  let policy = ''
  if (o.holdAbove !== undefined) {
    const keygen = await cli(['operator', 'keygen', '--name', 'alice', '--json'], { cwd: dir })
    expect(keygen.code, keygen.stderr).toBe(0)
    const publicKey = (JSON.parse(keygen.stdout) as { publicKey: string }).publicKey
    policy = `
[[operators]]
name = "alice"
public_key = "${publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "stripe"
when = [{ arg = "amount", above = "${o.holdAbove}" }]
`
  }
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]
path = "journal.db"

[gate]
max_attempts = 2
backoff_ms = 5
max_wait_ms = 2000

[targets.stripe]
type = "stripe"
api_key = "\${STRIPE_API_KEY}"
base_url = "${stripe.url}"
timeout_ms = 5000

[targets.slack]
type = "slack"
token = "\${SLACK_TOKEN}"
base_url = "${slack.url}"
timeout_ms = 5000
${policy}`,
  )
  const opened: Interlock[] = []
  return {
    dir,
    stripe,
    slack,
    env,
    async open() {
      const i = await openInterlock({ cwd: dir, env, sleep: async () => {} })
      opened.push(i)
      return i
    },
    async release(effectId) {
      const run = await cli(['outbox', 'release', effectId, '--yes', '--key', join(dir, 'alice.operator.key')], { cwd: dir, env })
      expect(run.code, run.stderr).toBe(0)
    },
    refunds: () => stripe.refunds.length,
    async journal() {
      const i = await openInterlock({ cwd: dir, env })
      try {
        return (await i.store.list()).map((s) => ({ effectId: s.effect.id, target: s.effect.target, state: s.state, thread: s.effect.thread }))
      } finally {
        await i.close()
      }
    },
    async close() {
      for (const i of opened) await i.close()
      await Promise.all([stripe.close(), slack.close()])
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
