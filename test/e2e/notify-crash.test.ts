/**
 * Notices across a relay SIGKILLed (`interlock relay`, the built binary),
 * counted at the channel's own ledger (the Slack emulator):
 * - killed between the event and its notice (right after the HELD record is
 *   durable, nothing proposed yet): the next relay finds the event in the
 *   journal and tells it once;
 * - killed after Slack took the notice and before it was journaled COMMITTED:
 *   Slack is tier 3, so the notice becomes AMBIGUOUS and is not posted
 *   again: never doubled, and the operator sees why;
 * - the same kill with a webhook channel (tier 1): the next relay sends the
 *   notice again with the same Idempotency-Key, and the receiver, which
 *   keeps the keys it has acted on, acts on it once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { NOTIFY_THREAD } from '../../src/core/notify/events.js'
import { Outbox } from '../../src/core/outbox/outbox.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { assertCliBuilt } from '../helpers/cli.js'
import { relayReady, startRelayProc, type RelayProc } from '../helpers/relay-procs.js'
import { SlackEmulator } from '../emulators/slack.js'
import { StripeEmulator } from '../emulators/stripe.js'
import { WebhookReceiver } from '../emulators/webhook.js'
import { until } from '../helpers/until.js'

const STRIPE_KEY = 'sk_test_51NotifyCrashKeyThatMustNeverLeak'
let slack: SlackEmulator
let stripe: StripeEmulator
let hook: WebhookReceiver
const dirs: string[] = []

beforeAll(async () => {
  assertCliBuilt()
  slack = await new SlackEmulator().start()
  slack.seedChannel({ id: 'C0OPS', name: 'ops' })
  stripe = await new StripeEmulator(STRIPE_KEY).start()
  stripe.seedCharge({ id: 'ch_crash', amount: 900_000, currency: 'usd' })
  hook = await new WebhookReceiver().start()
})
afterAll(async () => {
  await slack.close()
  await stripe.close()
  await hook.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

interface Deployment {
  dir: string
  env: Record<string, string>
  store: Store
  outbox: Outbox
  close(): Promise<void>
}

async function deployment(channel: 'slack' | 'webhook' = 'slack'): Promise<Deployment> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-notify-crash-'))
  dirs.push(dir)
  writeKeyFile(join(dir, 'relay.key'), generateKeyPair('relay', 'relay'))
  const toml = `[store]
path = "journal.db"

[relay]
key = "relay.key"

[targets.payments]
type = "stripe"
api_key = "\${STRIPE_API_KEY}"
base_url = "${stripe.url}"

[targets.ops]
type = "slack"
token = "\${SLACK_TOKEN}"
base_url = "${slack.url}"

[[operators]]
name = "alice"
public_key = "${generateKeyPair('operator', 'alice').publicKey}"

[[policy.rules]]
name = "big-refunds"
target = "payments"
when = [{ arg = "amount", above = "1000" }]

[targets.hook]
type = "webhook"
url = "${hook.url}/interlock"
secret = "\${HOOK_SECRET}"

[[notify]]
name = "holds"
on = ["held"]
${channel === 'slack' ? 'channel = "ops"\nslack_channel = "C0OPS"' : 'channel = "hook"'}
window = "0s"
`
  writeFileSync(join(dir, 'interlock.toml'), toml)
  const env = { STRIPE_API_KEY: STRIPE_KEY, SLACK_TOKEN: slack.token, HOOK_SECRET: hook.secret }
  const config = parseConfig(toml, { file: join(dir, 'interlock.toml'), env })
  const store = await openStore(config.store)
  const targets = createTargets(config.targets)
  const outbox = new Outbox({ store, targets: targets.values(), pollMs: 20 })
  return {
    dir,
    env,
    store,
    outbox,
    close: async () => {
      await outbox.close()
      for (const t of targets.values()) await t.close?.()
      await store.close()
    },
  }
}

const relay = (d: Deployment, id: string, more: Record<string, string> = {}): RelayProc => startRelayProc(id, ['--poll-ms', '20', '--lease-ms', '600'], d.dir, { ...d.env, ...more })


async function stop(p: RelayProc): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM')
  await p.exited
}

describe('notices across a relay SIGKILLed', { timeout: 120_000 }, () => {
  it('killed between the event and its notice: the next relay finds the event in the journal and tells it once', async () => {
    const d = await deployment()
    const dying = relay(d, 'relay-a', { INTERLOCK_CRASH_AT: 'after-held' })
    try {
      const held = await d.outbox.submit({ thread: 'run-1', target: 'payments', action: 'refund', args: { charge: 'ch_crash', amount: '2500.00', currency: 'usd' } })
      expect((await dying.exited).signal, dying.stderr).toBe('SIGKILL')
      expect((await d.store.get(held.effectId))?.state).toBe('HELD')
      expect(await d.store.list({ thread: NOTIFY_THREAD })).toEqual([])
      expect([...slack.messages.values()].filter((m) => m.text?.includes(held.effectId))).toHaveLength(0)

      const next = relay(d, 'relay-b')
      try {
        await relayReady(next)
        const [notice] = await until('the notice committed', async () => {
          const n = await d.store.list({ thread: NOTIFY_THREAD, states: ['COMMITTED'] })
          return n.length > 0 ? n : undefined
        })
        expect(slack.postsFor(notice!.effect.id)).toHaveLength(1)
        expect(slack.postsFor(notice!.effect.id)[0]!.text).toContain(`interlock outbox release ${held.effectId}`)
      } finally {
        await stop(next)
      }
    } finally {
      await stop(dying)
      await d.close()
    }
  })

  it('killed after Slack took the notice, before COMMITTED: the notice is AMBIGUOUS (Slack is tier 3), posted once, never again', async () => {
    const d = await deployment()
    // The first apply in this relay is the notice's: the held refund is not sent.
    const dying = relay(d, 'relay-c', { INTERLOCK_CRASH_AT: 'after-apply' })
    try {
      const held = await d.outbox.submit({ thread: 'run-2', target: 'payments', action: 'refund', args: { charge: 'ch_crash', amount: '3500.00', currency: 'usd' } })
      expect((await dying.exited).signal, dying.stderr).toBe('SIGKILL')
      const [notice] = await d.store.list({ thread: NOTIFY_THREAD })
      expect(notice?.state).toBe('DISPATCHED')
      expect(slack.postsFor(notice!.effect.id)).toHaveLength(1)

      const next = relay(d, 'relay-d')
      try {
        await relayReady(next)
        await until('the notice settled', async () => (await d.store.get(notice!.effect.id))?.state === 'AMBIGUOUS')
        expect(slack.postsFor(notice!.effect.id)).toHaveLength(1)
        expect(await d.store.list({ thread: NOTIFY_THREAD })).toHaveLength(1)
        expect((await d.store.get(held.effectId))?.state).toBe('HELD')
      } finally {
        await stop(next)
      }
    } finally {
      await stop(dying)
      await d.close()
    }
  })
  it('the same kill with a webhook channel (tier 1): sent again with the same Idempotency-Key, acted on once by the receiver', async () => {
    const d = await deployment('webhook')
    const dying = relay(d, 'relay-e', { INTERLOCK_CRASH_AT: 'after-apply' })
    try {
      const held = await d.outbox.submit({ thread: 'run-3', target: 'payments', action: 'refund', args: { charge: 'ch_crash', amount: '4500.00', currency: 'usd' } })
      expect((await dying.exited).signal, dying.stderr).toBe('SIGKILL')
      const [notice] = await d.store.list({ thread: NOTIFY_THREAD })
      expect(notice?.state).toBe('DISPATCHED')
      expect(hook.count(notice!.effect.id)).toBe(1)

      const next = relay(d, 'relay-f')
      try {
        await relayReady(next)
        await until('the notice committed', async () => (await d.store.get(notice!.effect.id))?.state === 'COMMITTED')
        const deliveries = hook.deliveries.filter((x) => x.key === notice!.effect.id)
        expect(deliveries.length).toBe(2)
        expect(deliveries.every((x) => x.verified)).toBe(true)
        expect(hook.count(notice!.effect.id)).toBe(1)
        expect(JSON.stringify(deliveries[0]!.body)).toContain(held.effectId)
      } finally {
        await stop(next)
      }
    } finally {
      await stop(dying)
      await d.close()
    }
  })
})
