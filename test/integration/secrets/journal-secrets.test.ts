/**
 * The secrets guard in the library, on real SQLite and PostgreSQL stores:
 * what a Gate, an Outbox and a Relay append keeps no value from the
 * environment, in any spelling; an effect whose args hold one is refused;
 * premises are scrubbed when captured, so a premise read again after a crash
 * compares equal; a Relay's log lines and signed receipts are scrubbed too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../../src/core/config/load.js'
import type { InterlockConfig } from '../../../src/core/config/types.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import type { Effect, Receipt } from '../../../src/core/effect.js'
import { DispatchFault, InputError, TargetError } from '../../../src/core/errors.js'
import { Gate } from '../../../src/core/gate.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { verifyStore } from '../../../src/core/outbox/verify-sources.js'
import { Relay } from '../../../src/core/relay/relay.js'
import type { Store } from '../../../src/core/stores/store.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import type { EffectTarget } from '../../../src/core/targets/target.js'
import { startEchoService, type EchoService } from '../../helpers/echo-service.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox, type OutboxHarness } from '../../helpers/outbox-stores.js'
import { dumpStore, expectNoLeak, HOOK_TOKEN, SECRET_ENV, secretHookToml } from '../../helpers/secret-leaks.js'

let echo: EchoService
beforeAll(async () => {
  echo = await startEchoService()
})
afterAll(async () => {
  await echo?.close()
  await dropOutboxDatabase()
})

/** A webhook whose URL carries the token and whose premise read says it back. */
function webhookConfig(): InterlockConfig {
  return parseConfig(secretHookToml('hook', echo.url), { file: '/etc/interlock/interlock.toml', env: SECRET_ENV })
}

/** A target of one's own that says the secret back in every way a service might. */
class EchoingTarget implements EffectTarget {
  readonly tier = 3 as const
  constructor(
    readonly name: string,
    private readonly premiseFailure?: string,
  ) {}
  async validatePremises(): Promise<string[]> {
    if (this.premiseFailure) throw new TargetError(this.premiseFailure)
    return []
  }
  async apply(effect: Effect): Promise<Receipt> {
    if (effect.args.refuse) throw new DispatchFault('refused', `POST https://hooks.example/${encodeURIComponent(HOOK_TOKEN)} answered 403: ${JSON.stringify({ token: HOOK_TOKEN })}`)
    return { said: JSON.stringify({ token: HOOK_TOKEN }), url: `https://hooks.example/?t=${encodeURIComponent(HOOK_TOKEN)}`, raw: HOOK_TOKEN }
  }
}

const stores: [string, () => Promise<OutboxHarness>][] = [
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
]

describe.each(stores)('the secrets guard on %s', (_name, harness) => {
  let h: OutboxHarness
  let store: Store
  beforeAll(async () => {
    h = await harness()
    store = await h.open()
  })
  afterAll(async () => {
    await store?.close()
    await h?.dispose()
  })

  async function expectCleanStore(): Promise<void> {
    expectNoLeak('journal_records rows', JSON.stringify(await h.rows()))
    expectNoLeak('every table', await dumpStore(h.config))
  }

  it('refuses an effect whose args hold a secret, in any spelling, and journals nothing (Gate and Outbox)', async () => {
    const config = webhookConfig()
    const targets = createTargets(config.targets)
    const gate = new Gate({ store, targets: targets.values() })
    const outbox = new Outbox({ store, targets: targets.values() })
    const spellings = { raw: HOOK_TOKEN, json: JSON.stringify({ t: HOOK_TOKEN }), url: `https://x.example/?t=${encodeURIComponent(HOOK_TOKEN)}` }
    try {
      for (const [how, note] of Object.entries(spellings)) {
        const input = { thread: `refused-${how}`, target: 'hook', action: 'post', args: { text: 'hi', meta: { note } } }
        const viaGate = await gate.submit(input).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(viaGate, how).toBeInstanceOf(InputError)
        expect((viaGate as InputError).message).toContain('effect.args.meta.note holds a secret')
        expectNoLeak('the error', JSON.stringify({ m: (viaGate as InputError).message, h: (viaGate as InputError).hint }))
        await expect(outbox.submit(input)).rejects.toThrow(InputError)
        expect(await store.list({ thread: input.thread })).toEqual([])
      }
      await expectCleanStore()
    } finally {
      await outbox.close()
      await gate.close()
    }
  })

  it('journals a premise read that says the secret back scrubbed, and reading it again after a crash compares equal', async () => {
    // The agent's side, as main built it: targets from the config, no secrets passed by hand.
    const config = webhookConfig()
    const agentTargets = createTargets(config.targets)
    const outbox = new Outbox({ store, targets: agentTargets.values() })
    const args = { text: 'deployed' }
    const premises = await agentTargets.get('hook')!.capture!('post', args)
    expect(JSON.stringify(premises)).toMatch(/\[redacted\]|\*\*\*/)
    const handle = await outbox.submit({ thread: 'premise-echo', target: 'hook', action: 'post', args, premises })
    await outbox.close()
    for (const t of agentTargets.values()) await t.close?.()

    // The agent's process is gone; recovery in another one reads the premise again.
    const recovering = new Gate({ store, targets: createTargets(config.targets).values() })
    const report = await recovering.recover()
    await recovering.close()
    expect(report.effects.find((e) => e.effectId === handle.effectId)?.outcome?.status).toBe('committed')
    const history = await store.history(handle.effectId)
    expect(history.map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    await expectCleanStore()
  })

  it('scrubs what a target says back (JSON-escaped, percent-encoded) from receipts and reasons before they reach the store', async () => {
    const gate = new Gate({ store, targets: [new EchoingTarget('own')], secrets: [HOOK_TOKEN] })
    try {
      const ok = await gate.submit({ thread: 'own-target', target: 'own', action: 'post', args: { n: 1 } })
      const refused = await gate.submit({ thread: 'own-target', target: 'own', action: 'post', args: { n: 2, refuse: true } })
      expect([ok.status, refused.status]).toEqual(['committed', 'failed'])
      const receipt = (await store.get(ok.effectId))!.detail.receipt
      expect(receipt).toEqual({ said: '{"token":"***"}', url: 'https://hooks.example/?t=***', raw: '***' })
      expect((await store.get(refused.effectId))!.detail.reason).toBe('POST https://hooks.example/*** answered 403: {"token":"***"}')
      await expectCleanStore()
    } finally {
      await gate.close()
    }
  })

  // One relay key for both runs: they share the store, whose every receipt verify checks.
  const key = generateKeyPair('relay', 'relay-secrets')
  it.each(['text', 'json'] as const)("keeps secrets out of a relay's log lines (%s), and seals what it journals as it is journaled", async (logFormat) => {
    const url = `https://hooks.example/${HOOK_TOKEN}?sig=${encodeURIComponent(HOOK_TOKEN)}`
    const slow = new EchoingTarget('slow', `GET ${url} failed: ${JSON.stringify({ url })}`)
    const fine = new EchoingTarget('fine')
    const outbox = new Outbox({ store, targets: [slow, fine] })
    const stuck = await outbox.submit({ thread: `relay-log-${logFormat}`, target: 'slow', action: 'post', args: { n: 1 } })
    const done = await outbox.submit({ thread: `relay-log-${logFormat}`, target: 'fine', action: 'post', args: { n: 2 } })
    const lines: string[] = []
    const relay = new Relay({ store, targets: [slow, fine], relayId: 'relay-secrets', key, policy: new RulesPolicy([]), secrets: [HOOK_TOKEN], pollMs: 20, leaseMs: 2_000, logFormat, log: (l) => lines.push(l) })
    await relay.start()
    try {
      expect((await done.result()).status).toBe('committed')
      const end = Date.now() + 10_000
      while (!lines.some((l) => l.includes(stuck.effectId))) {
        if (Date.now() > end) throw new Error(`no log line about ${stuck.effectId}: ${lines.join('\n')}`)
        await new Promise((r) => setTimeout(r, 20))
      }
    } finally {
      await relay.stop()
      await outbox.close()
    }
    const line = lines.find((l) => l.includes(stuck.effectId))!
    expect(logFormat === 'json' ? (JSON.parse(line) as { msg: string }).msg : line).toContain('GET https://hooks.example/***?sig=*** failed')
    expectNoLeak('relay log lines', lines.join('\n'))
    const report = await verifyStore(store, { operators: [], relays: [{ name: 'relay-secrets', publicKey: key.publicKey }] })
    // What the relay sealed is what it journaled, scrubbed: its seals verify over the records as stored
    // (the store's other journals were written by this file's unsigned gates).
    expect(report.problems.filter((p) => p.journal.startsWith('relay-log-')).map((p) => p.message)).toEqual([])
    expect(report.seals.invalid).toBe(0)
    expect(report.writers.sealed).toBeGreaterThanOrEqual(3)
    expect((await store.get(done.effectId))!.detail.receipt).toMatchObject({ raw: '***' })
    await expectCleanStore()
  })
})
