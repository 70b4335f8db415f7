/**
 * The library's front door: openInterlock() builds the store, the targets
 * (with the config's secrets), the policy of [[policy.rules]], the operators
 * and the retry settings from one interlock.toml; and a Gate or a Relay built
 * by hand around that config's targets, without its rules, is refused.
 */
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/core/config/load.js'
import type { InterlockConfig } from '../../src/core/config/types.js'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { recordSignatureOf } from '../../src/core/crypto/record-signature.js'
import { ConfigError } from '../../src/core/errors.js'
import { Gate } from '../../src/core/gate.js'
import { openInterlock } from '../../src/core/index.js'
import { allowAll } from '../../src/core/policy.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { verifyStore } from '../../src/core/outbox/verify-sources.js'
import { Relay, type RelayOptions } from '../../src/core/relay/relay.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'

const PAY_TOKEN = 'sk_live_front_door_7Qx"2'
const operator = generateKeyPair('operator', 'alice')
let service: HttpService
beforeAll(async () => {
  service = await startHttpService()
})
afterAll(async () => {
  await service?.close()
})

/** A refunds target whose large refunds a quorum-2 rule holds, in a folder of its own. */
function deployment(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-front-door-'))
  const file = join(dir, 'interlock.toml')
  writeFileSync(
    file,
    `[store]
path = "journal.db"

[gate]
max_attempts = 3
backoff_ms = 7
max_wait_ms = 4000

[targets.refunds]
type = "http"
tier = 1
url = "${service.url}/idempotent"
headers = { Authorization = "Bearer \${PAY_TOKEN}" }

[[operators]]
name = "alice"
public_key = "${operator.publicKey}"

[[operators]]
name = "bob"
public_key = "${generateKeyPair('operator', 'bob').publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "refunds"
quorum = 2
when = [{ arg = "amount", above = "500.00", currency = "USD" }]
`,
  )
  return { dir, file }
}

const refund = (amount: string, thread = 'agent-1') => ({ thread, target: 'refunds', action: 'refund', args: { amount, currency: 'USD' } })

describe('openInterlock', () => {
  it('builds store, targets, policy, operators and retry from interlock.toml; its gate holds what a rule holds', async () => {
    const { dir } = deployment()
    const interlock = await openInterlock({ cwd: dir, env: { PAY_TOKEN } })
    try {
      expect(interlock.policy.rules.map((r) => r.name)).toEqual(['large-refunds'])
      expect(interlock.operators.map((o) => o.name)).toEqual(['alice', 'bob'])
      expect(interlock.retry).toEqual({ maxAttempts: 3, backoffMs: 7, maxWaitMs: 4000 })
      expect([...interlock.targets.keys()]).toEqual(['refunds'])
      expect(interlock.secrets).toEqual([PAY_TOKEN])

      const large = await interlock.gate.submit(refund('900.00'))
      const small = await interlock.gate.submit(refund('12.00'))
      expect([large.status, small.status]).toEqual(['held', 'committed'])
      expect(service.counts().idempotent).toEqual({ [small.effectId]: 1 })
      expect((await interlock.store.get(large.effectId))?.detail).toMatchObject({ rule: 'large-refunds' })

      // Its outbox only proposes: the relay holds by the same rules (test/integration/relay/trust.test.ts).
      const queued = await interlock.outbox.submit(refund('700.00', 'agent-2'))
      expect(queued.state).toBe('PROPOSED')
      expect((await interlock.store.history(queued.effectId)).map((r) => r.state)).toEqual(['PROPOSED'])
    } finally {
      await interlock.close()
      service.reset()
    }
    await expect(interlock.store.get('0'.repeat(64))).rejects.toThrow()
  })

  it('takes a config already loaded, and the file named by configPath', async () => {
    const { dir, file } = deployment()
    const config = loadConfig({ path: file, env: { PAY_TOKEN } })
    const a = await openInterlock({ config })
    const b = await openInterlock({ configPath: 'interlock.toml', cwd: dir, env: { PAY_TOKEN } })
    try {
      expect(a.config).toBe(config)
      expect(b.config.file).toBe(file)
      expect((await a.gate.submit(refund('900.00'))).status).toBe('held')
    } finally {
      await a.close()
      await b.close()
    }
  })
})

describe('openInterlock with a [relay] key', () => {
  it('its gate seals every record it journals with that key, and verify checks them under [relay] id', async () => {
    const { dir, file } = deployment()
    const relayKey = generateKeyPair('relay', 'relay-key-file-name')
    writeKeyFile(join(dir, 'relay.key'), relayKey)
    appendFileSync(file, '\n[relay]\nid = "relay-1"\nkey = "relay.key"\n')
    const interlock = await openInterlock({ cwd: dir, env: { PAY_TOKEN } })
    try {
      const small = await interlock.gate.submit(refund('12.00'))
      expect(small.status).toBe('committed')
      const history = await interlock.store.history(small.effectId)
      const seals = await interlock.store.seals()
      for (const r of history) {
        expect(recordSignatureOf(r.data), r.state).toBeUndefined()
        expect(seals.filter((s) => s.statement.records.includes(r.hash)).map((s) => [s.statement.signer, s.publicKey]), r.state).toEqual([['relay-1', relayKey.publicKey]])
      }
      const report = await verifyStore(interlock.store, { operators: interlock.operators, policy: interlock.policy, relays: [{ name: 'relay-1', publicKey: relayKey.publicKey }] })
      expect(report).toMatchObject({ ok: true, writers: { valid: 4, sealed: 4, unsigned: 0 }, seals: { valid: seals.length, invalid: 0 } })
    } finally {
      await interlock.close()
      service.reset()
    }
  })
})

describe('a Gate or a Relay built by hand', () => {
  let config: InterlockConfig
  let store: Store
  beforeAll(async () => {
    config = loadConfig({ path: deployment().file, env: { PAY_TOKEN } })
    store = await openStore(config.store)
  })
  afterAll(async () => {
    await store?.close()
  })

  it("around a config's targets, without its rules, is a ConfigError naming the rules and the fix", () => {
    for (const policy of [undefined, allowAll, new RulesPolicy([])]) {
      let error: unknown
      try {
        new Gate({ store, targets: createTargets(config.targets).values(), policy })
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(ConfigError)
      const e = error as ConfigError
      expect(e.message).toContain('"large-refunds"')
      expect(e.message).toContain(config.file)
      expect(e.problems).toEqual(['policy.rules "large-refunds" holds effects on refunds'])
      expect(e.hint).toMatch(/openInterlock\(\).*new RulesPolicy\(config\.policy\.rules\)/)
    }
    // A relay's policy is a required option; built without one anyway (from JavaScript), the config's rules are named.
    const noPolicy = { store, targets: createTargets(config.targets).values(), relayId: 'r1', key: generateKeyPair('relay', 'r1') }
    expect(() => new Relay(noPolicy as unknown as RelayOptions)).toThrow(ConfigError)
    const late = new Gate({ store })
    expect(() => late.register(createTargets(config.targets).get('refunds')!)).toThrow(/large-refunds/)
  })

  it("with the config's rules, or a policy of one's own, is built and holds", async () => {
    const gate = new Gate({ store, targets: createTargets(config.targets).values(), policy: new RulesPolicy(config.policy.rules) })
    try {
      expect((await gate.submit(refund('950.00', 'by-hand'))).status).toBe('held')
    } finally {
      await gate.close()
    }
    const own = new Gate({ store, targets: createTargets(config.targets).values(), policy: { evaluate: () => ({ rule: 'mine' }) } })
    expect((await own.submit(refund('1.00', 'own-policy'))).status).toBe('held')
    await own.close()
  })
})
