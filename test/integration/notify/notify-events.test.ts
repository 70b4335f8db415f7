/**
 * The events notices are made from, read from a real SQLite journal: an
 * effect the service refused (FAILED: a Slack post to an archived channel), one left AMBIGUOUS by a crash in
 * flight, the same still waiting past a rule's `waiting`, and one a relay
 * refused to send because its row was edited behind its journal (kept in the
 * relay's heartbeat, since a refusal writes no transition). Each is told by
 * the rule that asks for it, and only by that rule.
 */
import Database from 'better-sqlite3'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../../src/core/canonical-json.js'
import { parseConfig } from '../../../src/core/config/load.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { toEffect } from '../../../src/core/effect.js'
import { Gate } from '../../../src/core/gate.js'
import { Notifier } from '../../../src/core/notify/notifier.js'
import type { EffectInput } from '../../../src/core/effect.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { Relay } from '../../../src/core/relay/relay.js'
import { openStore } from '../../../src/core/stores/open.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import { journalDispatched } from '../../helpers/sqlite-gate.js'
import { SlackEmulator } from '../../emulators/slack.js'
import { StripeEmulator } from '../../emulators/stripe.js'

const STRIPE_KEY = 'sk_test_51NotifyEventsKeyThatMustNeverLeak'
let slack: SlackEmulator
let stripe: StripeEmulator
let dir: string

beforeAll(async () => {
  slack = await new SlackEmulator().start()
  slack.seedChannel({ id: 'C0OPS', name: 'ops' })
  stripe = await new StripeEmulator(STRIPE_KEY).start()
  stripe.seedCharge({ id: 'ch_ev', amount: 900_000, currency: 'usd' })
  dir = mkdtempSync(join(tmpdir(), 'interlock-notify-events-'))
})
afterAll(async () => {
  await slack.close()
  await stripe.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('events in the journal, told by the rules that ask for them', () => {
  it('FAILED, AMBIGUOUS, AMBIGUOUS past its wait, and refused by a relay', async () => {
    const toml = `[store]
path = "journal.db"

[targets.payments]
type = "stripe"
api_key = "\${STRIPE_API_KEY}"
base_url = "${stripe.url}"

[targets.ops]
type = "slack"
token = "\${SLACK_TOKEN}"
base_url = "${slack.url}"

[[notify]]
name = "failures"
on = ["failed", "refused"]
channel = "ops"
slack_channel = "C0OPS"
window = "0s"

[[notify]]
name = "unknowns"
on = ["ambiguous"]
channel = "ops"
slack_channel = "C0OPS"
window = "0s"

[[notify]]
name = "reminders"
on = ["ambiguous_waiting"]
waiting = "1h"
channel = "ops"
slack_channel = "C0OPS"
window = "0s"
`
    writeFileSync(join(dir, 'interlock.toml'), toml)
    const config = parseConfig(toml, { file: join(dir, 'interlock.toml'), env: { STRIPE_API_KEY: STRIPE_KEY, SLACK_TOKEN: slack.token } })
    const store = await openStore(config.store)
    const targets = createTargets(config.targets)
    const gate = new Gate({ store, targets: targets.values(), retry: { maxAttempts: 1, backoffMs: 1 } })
    const proposed: EffectInput[] = []
    const journal = new Outbox({ store, targets: targets.values() })
    const notifier = (now: number) =>
      new Notifier({
        store,
        config,
        now: () => now,
        propose: async (input) => {
          proposed.push(input)
          await journal.submit(input)
        },
      })
    try {
      // FAILED: Slack refuses a post (a definite no).
      slack.failNextPost('is_archived')
      const failed = await gate.submit({ thread: 'ev', target: 'ops', action: 'post', args: { channel: 'C0OPS', text: 'refund done' } })
      expect(failed.status).toBe('failed')
      // AMBIGUOUS: a Slack post (tier 3) in flight when its process died.
      const post = toEffect({ thread: 'ev', target: 'ops', action: 'post', args: { channel: 'C0OPS', text: 'hello' } })
      await journalDispatched(store, post, 3)
      await gate.recover()
      expect((await store.get(post.id))?.state).toBe('AMBIGUOUS')
      // Refused by a relay: the proposal's row edited behind its journal.
      const outbox = new Outbox({ store, targets: targets.values() })
      const edited = await outbox.submit({ thread: 'ev', target: 'payments', action: 'refund', args: { charge: 'ch_ev', amount: '5.00', currency: 'usd' } })
      const db = new Database(join(dir, 'journal.db'))
      const row = db.prepare('SELECT effect FROM effects WHERE id = ?').get(edited.effectId) as { effect: string }
      db.prepare('UPDATE effects SET effect = ? WHERE id = ?').run(canonicalJson({ ...JSON.parse(row.effect), args: { charge: 'ch_ev', amount: '9000.00', currency: 'usd' } }), edited.effectId)
      db.close()
      const relay = new Relay({ store, targets: targets.values(), relayId: 'relay-e', key: generateKeyPair('relay', 'relay-e'), policy: new RulesPolicy([]), pollMs: 20, leaseMs: 2000 })
      await relay.start()
      const end = Date.now() + 20_000
      while (!JSON.stringify((await store.relays()).map((r) => r.info)).includes(edited.effectId) && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
      await relay.stop()
      expect(stripe.refundsFor(edited.effectId)).toHaveLength(0)

      // Now: each event told by its rule, once.
      const ambiguousAt = Date.parse((await store.get(post.id))!.updatedAt)
      expect((await notifier(ambiguousAt + 1000).pass()).proposed).toBe(3)
      const byKey = (prefix: string) => proposed.filter((p) => p.key!.startsWith(prefix))
      expect(byKey(`notify/failures/${failed.effectId}.failed.`)).toHaveLength(1)
      expect(byKey(`notify/failures/${edited.effectId}.refused.`)).toHaveLength(1)
      expect(String(byKey(`notify/failures/${edited.effectId}.refused.`)[0]!.args.text)).toContain('relay-e refused it (row-disagrees)')
      expect(byKey(`notify/unknowns/${post.id}.ambiguous.`)).toHaveLength(1)
      expect(String(byKey('notify/unknowns/')[0]!.args.text)).toContain(`Resolve: interlock outbox resolve ${post.id} --applied`)
      expect(byKey('notify/reminders/')).toHaveLength(0)
      // An hour later it still waits: the reminder rule tells it.
      proposed.length = 0
      await notifier(ambiguousAt + 3_600_000 + 1).pass()
      expect(proposed.map((p) => p.key)).toEqual([`notify/reminders/${post.id}.ambiguous_waiting.${(await store.get(post.id))!.seq}.3600000`])
    } finally {
      await journal.close()
      await gate.close()
      await store.close()
    }
  })
})
