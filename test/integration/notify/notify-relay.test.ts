/**
 * [[notify]] through a relay: an effect a rule holds is told in Slack (who
 * holds it, releases so far of how many, the exact command); a release that
 * leaves the quorum incomplete is told again; many AMBIGUOUS effects at once
 * are told in one grouped notice; notices are effects in the notifications
 * thread, journaled once however many relays and passes see the event, and
 * never told about themselves. Real SQLite journal, the Slack emulator's own
 * ledger of messages.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../../src/core/config/load.js'
import type { InterlockConfig } from '../../../src/core/config/types.js'
import { systemClock } from '../../../src/core/clock.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { NOTIFY_THREAD } from '../../../src/core/notify/events.js'
import { Notifier } from '../../../src/core/notify/notifier.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { releaseEffect } from '../../../src/core/outbox/release.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { Relay } from '../../../src/core/relay/relay.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { Store } from '../../../src/core/stores/store.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import { SlackEmulator } from '../../emulators/slack.js'
import { StripeEmulator } from '../../emulators/stripe.js'
import { SendgridEmulator } from '../../emulators/sendgrid.js'
import { until } from '../../helpers/until.js'

const STRIPE_KEY = 'sk_test_51NotifyEmulatorKeyThatMustNeverLeak'
const alice = generateKeyPair('operator', 'alice')
const bob = generateKeyPair('operator', 'bob')

let slack: SlackEmulator
let stripe: StripeEmulator
const dirs: string[] = []

beforeAll(async () => {
  slack = await new SlackEmulator().start()
  slack.seedChannel({ id: 'C0OPS', name: 'ops' })
  stripe = await new StripeEmulator(STRIPE_KEY).start()
  for (let i = 0; i < 60; i++) stripe.seedCharge({ id: `ch_n${i}`, amount: 100_000, currency: 'usd' })
})
afterAll(async () => {
  await slack.close()
  await stripe.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function configFor(notify: string): InterlockConfig {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-notify-'))
  dirs.push(dir)
  const toml = `[store]
path = "journal.db"

[targets.payments]
type = "stripe"
api_key = "\${STRIPE_API_KEY}"
base_url = "${stripe.url}"
timeout_ms = 3000

[targets.ops]
type = "slack"
token = "\${SLACK_TOKEN}"
base_url = "${slack.url}"

[[operators]]
name = "alice"
public_key = "${alice.publicKey}"
[[operators]]
name = "bob"
public_key = "${bob.publicKey}"

[[policy.rules]]
name = "big-refunds"
target = "payments"
when = [{ arg = "amount", above = "1000" }]
quorum = 2

${notify}`
  writeFileSync(join(dir, 'interlock.toml'), toml)
  return parseConfig(toml, { file: join(dir, 'interlock.toml'), env: { STRIPE_API_KEY: STRIPE_KEY, SLACK_TOKEN: slack.token, HOOK_SECRET: 'whsec_notify_test_secret', SENDGRID_API_KEY: 'SG.emulator.key-for-tests-only' } })
}

interface World {
  config: InterlockConfig
  store: Store
  outbox: Outbox
  relays: Relay[]
  close(): Promise<void>
}

async function world(notify: string, relays = 1): Promise<World> {
  const config = configFor(notify)
  const store = await openStore(config.store)
  const made: ReturnType<typeof createTargets>[] = []
  const relay = (i: number) => {
    const targets = createTargets(config.targets)
    made.push(targets)
    return new Relay({ store, targets: targets.values(), relayId: `relay-${i}`, key: generateKeyPair('relay', `relay-${i}`), policy: new RulesPolicy(config.policy.rules), operators: config.operators, pollMs: 20, leaseMs: 2000, notify: config, notifyEveryMs: 30, healthPort: 0 })
  }
  const all = Array.from({ length: relays }, (_, i) => relay(i))
  const targets = createTargets(config.targets)
  made.push(targets)
  const outbox = new Outbox({ store, targets: targets.values(), pollMs: 20 })
  for (const r of all) await r.start()
  return {
    config,
    store,
    outbox,
    relays: all,
    close: async () => {
      for (const r of all) await r.stop()
      await outbox.close()
      for (const m of made) for (const t of m.values()) await t.close?.()
      await store.close()
    },
  }
}


const messagesIn = (channel: string) => [...slack.messages.values()].filter((m) => m.channel === channel)
const refund = (charge: string, amount: string) => ({ thread: 'agent-run-7', target: 'payments', action: 'refund', args: { charge, amount, currency: 'usd' } })

afterEach(() => slack.messages.clear())

describe('[[notify]] through relays', () => {
  it('a held refund is told once in Slack, with the rule, releases so far of how many, and the command; a release short of the quorum is told again', async () => {
    const w = await world(`[[notify]]\nname = "ops-holds"\non = ["held", "release"]\nchannel = "ops"\nslack_channel = "C0OPS"\nwindow = "0s"\nconsole_url = "http://127.0.0.1:7070"\n`, 2)
    try {
      const held = await w.outbox.submit(refund('ch_n1', '2500.00'))
      const told = await until('the held notice', () => messagesIn('C0OPS')[0])
      expect(told.text).toContain(`refund on payments, thread agent-run-7: held for operators`)
      expect(told.text).toContain('Held by rule big-refunds')
      expect(told.text).toContain('Releases: 0 of 2')
      expect(told.text).toContain(`Release: interlock outbox release ${held.effectId}`)
      expect(told.text).toContain(`Console: http://127.0.0.1:7070/effects/${held.effectId}`)
      expect(told.text).not.toContain(STRIPE_KEY)

      await releaseEffect({ store: w.store, operators: w.config.operators, policy: new RulesPolicy(w.config.policy.rules), key: alice, clock: systemClock }, held.effectId)
      const second = await until('the release notice', () => messagesIn('C0OPS').find((m) => m.text?.includes('Releases: 1 of 2 (alice)')))
      expect(second.text).toContain('released in part, the quorum not yet complete')
      // Two relays, passes every 30 ms: still one notice per event, each journaled once and sent once.
      for (let i = 0; i < 10; i++) for (const r of w.relays) await new Promise((res) => setTimeout(res, 5))
      const notices = await w.store.list({ thread: NOTIFY_THREAD })
      const keys = notices.map((n) => n.effect.key!).sort()
      expect(keys).toHaveLength(2)
      expect(keys[0]).toBe(`notify/ops-holds/${held.effectId}.held.2`)
      expect(keys[1]).toMatch(new RegExp(`^notify/ops-holds/${held.effectId}\\.release\\.\\d+$`))
      await until('both notices committed', async () => (await w.store.list({ thread: NOTIFY_THREAD, states: ['COMMITTED'] })).length === 2)
      expect(messagesIn('C0OPS')).toHaveLength(2)
      for (const n of notices) expect(slack.postsFor(n.effect.id)).toHaveLength(1)
    } finally {
      await w.close()
    }
  })

  it('many effects at once are one grouped notice per window, with the count and the first few ids; the notices are never told about', async () => {
    const w = await world(`[[notify]]\nname = "storm"\non = ["held", "failed"]\nchannel = "ops"\nslack_channel = "C0OPS"\nwindow = "1s"\n`)
    try {
      const ids: string[] = []
      for (let i = 10; i < 40; i++) ids.push((await w.outbox.submit(refund(`ch_n${i}`, '5000.00'))).effectId)
      const told = await until('the grouped notice', () => messagesIn('C0OPS').find((m) => m.text?.includes('effects held for operators')), 30_000)
      const count = Number(/(\d+) effects held for operators/.exec(told.text!)![1])
      expect(count).toBeGreaterThan(1)
      expect(told.text).toContain('First 5:')
      expect(told.text).toContain('See them all: interlock outbox list --state HELD --target payments')
      // Every held effect is told, in as few notices as windows it fell into.
      await until('every held effect told', () => messagesIn('C0OPS').reduce((n, m) => n + Number(/(\d+) effects held/.exec(m.text ?? '')?.[1] ?? (m.text?.includes('held for operators') ? 1 : 0)), 0) === ids.length, 30_000)
      expect(messagesIn('C0OPS').length).toBeLessThanOrEqual(5)
      for (const n of await w.store.list({ thread: NOTIFY_THREAD })) expect(n.effect.key).toMatch(/^notify\/storm\/\d+$/)
    } finally {
      await w.close()
    }
  })

  it('a channel unreachable, or refusing what a rule makes of a notice, never stops dispatch: the refunds go out, the failure is logged and counted in /metrics', async () => {
    const w = await world(`[targets.down]\ntype = "webhook"\nurl = "http://127.0.0.1:9/hook"\nsecret = "\${HOOK_SECRET}"\nconnect_timeout_ms = 200\n\n[targets.mail]\ntype = "sendgrid"\napi_key = "\${STRIPE_API_KEY}"\nbase_url = "http://127.0.0.1:9"\n\n[[notify]]\non = ["held"]\nchannel = "down"\nwindow = "0s"\n\n[[notify]]\non = ["held"]\nchannel = "mail"\nto = ["ops@shop.example"]\nfrom = "no address"\nwindow = "0s"\n`)
    try {
      await w.outbox.submit(refund('ch_n50', '5000.00'))
      const small = await w.outbox.submit(refund('ch_n51', '10.00'))
      expect((await small.result()).status).toBe('committed')
      expect(stripe.refundsFor(small.effectId)).toHaveLength(1)
      // The webhook's notice is journaled and waits on its channel; the mail one cannot be made, and says so.
      const notice = await until('the webhook notice journaled', async () => (await w.store.list({ thread: NOTIFY_THREAD }))[0])
      expect(notice.effect.target).toBe('down')
      const metrics = await until('a notify error counted', async () => {
        const text = await (await fetch(`http://127.0.0.1:${w.relays[0]!.healthPort}/metrics`)).text()
        return /interlock_relay_notify_errors_total\{relay="relay-0"\} [1-9]/.test(text) ? text : undefined
      })
      expect(metrics).toMatch(/interlock_relay_notices_total\{relay="relay-0"\} 1\b/)
    } finally {
      await w.close()
    }
  })
})

describe('[[notify]] by email', () => {
  it('a held refund is mailed through SendGrid to the rule\'s recipients, from its sender, once', async () => {
    const sendgrid = await new SendgridEmulator().start()
    const w = await world(`[targets.mail]\ntype = "sendgrid"\napi_key = "\${SENDGRID_API_KEY}"\nbase_url = "${sendgrid.url}"\n\n[[notify]]\nname = "mail-holds"\non = ["held"]\nchannel = "mail"\nto = ["ops@shop.example", "cfo@shop.example"]\nfrom = "interlock@shop.example"\nwindow = "0s"\n`, 2)
    try {
      const held = await w.outbox.submit(refund('ch_n56', '7000.00'))
      const notice = await until('the mail notice committed', async () => (await w.store.list({ thread: NOTIFY_THREAD, states: ['COMMITTED'] }))[0])
      const [mail, ...more] = sendgrid.sentFor(notice.effect.id)
      expect(more).toEqual([])
      expect(JSON.stringify(mail)).toContain('cfo@shop.example')
      expect(JSON.stringify(mail)).toContain(`interlock outbox release ${held.effectId}`)
    } finally {
      await w.close()
      await sendgrid.close()
    }
  })
})

describe('the notifier pass on its own', () => {
  it('a pass repeated, or run by two processes, journals each notice once', async () => {
    const w = await world(`[[notify]]\non = ["held"]\nchannel = "ops"\nslack_channel = "C0OPS"\nwindow = "0s"\n`, 0)
    try {
      // No relay: held by hand, as a relay would journal it.
      const relay = new Relay({ store: w.store, targets: createTargets(w.config.targets).values(), relayId: 'r', key: generateKeyPair('relay', 'r'), policy: new RulesPolicy(w.config.policy.rules), operators: w.config.operators, pollMs: 20 })
      await relay.start()
      const held = await w.outbox.submit(refund('ch_n55', '5000.00'))
      expect((await held.result()).status).toBe('held')
      await relay.stop()
      const proposed: string[] = []
      const pass = () => new Notifier({ store: w.store, config: w.config, propose: async (input) => void proposed.push((await w.outbox.submit(input)).effectId) }).pass()
      const results = await Promise.all([pass(), pass(), pass()])
      expect(results.map((r) => r.proposed)).toEqual([1, 1, 1])
      expect(new Set(proposed).size).toBe(1)
      expect(await w.store.list({ thread: NOTIFY_THREAD })).toHaveLength(1)
      // Journaled: the next pass owes nothing.
      expect((await pass()).proposed).toBe(0)
    } finally {
      await w.close()
    }
  })
})
