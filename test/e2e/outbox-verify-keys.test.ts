/**
 * `outbox verify` and relay keys, through the built binary: receipts are
 * checked against the [relay] key of interlock.toml (its public half) and
 * any --relay-key; a receipt signed by another key fails naming its record;
 * without any relay key it says receipts were not checked.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair, writeKeyFile, type KeyPair } from '../../src/core/crypto/keys.js'
import { followsOf } from '../../src/core/crypto/record-signature.js'
import { effectJson, toEffect } from '../../src/core/effect.js'
import { relaySigner } from '../../src/core/relay/relay-signer.js'
import { openStore } from '../../src/core/stores/open.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'

beforeAll(assertCliBuilt)

const relay1 = generateKeyPair('relay', 'relay-1')
const rogue = generateKeyPair('relay', 'rogue')
const operator = generateKeyPair('operator', 'alice')

/** A folder with the relay-1 and operator key files and a journal of committed effects, one per receipt signer. */
async function folder(signers: { key: KeyPair; relay: string }[]): Promise<{ cwd: string; seqs: number[] }> {
  const cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-verify-keys-'))
  writeKeyFile(join(cwd, 'relay-1.relay.key'), relay1, { passphrase: 'only the relay knows' })
  writeKeyFile(join(cwd, 'alice.operator.key'), operator)
  const store = await openStore({ kind: 'sqlite', path: join(cwd, 'journal.db') })
  const seqs: number[] = []
  try {
    for (const [i, s] of signers.entries()) {
      const effect = toEffect({ thread: 'orders', target: 'payments', action: 'refund', args: { n: i } })
      // As a relay journals it: every record past PROPOSED signed with its key, the receipt too.
      const signer = relaySigner(s.relay, s.key, () => new Date('2026-01-01T00:00:00.000Z'))
      // Each signed record follows the one before it (record-signature.ts followsOf); the proposal is journaled as { effect, tier }.
      const authorized = signer.sign(effect.id, 'PROPOSED', 'AUTHORIZED', followsOf({ effect: effectJson(effect), tier: 1 }), {})
      const dispatched = signer.sign(effect.id, 'AUTHORIZED', 'DISPATCHED', followsOf(authorized), {})
      const results = await store.append([
        { effectId: effect.id, from: null, to: 'PROPOSED', data: {}, effect, tier: 1 },
        { effectId: effect.id, from: 'PROPOSED', to: 'AUTHORIZED', data: authorized },
        { effectId: effect.id, from: 'AUTHORIZED', to: 'DISPATCHED', data: dispatched },
        { effectId: effect.id, from: 'DISPATCHED', to: 'COMMITTED', data: signer.sign(effect.id, 'DISPATCHED', 'COMMITTED', followsOf(dispatched), { receipt: { refund: `re_${i}` } }) },
      ])
      seqs.push(results[3]!.ok ? results[3]!.record.seq : -1)
    }
  } finally {
    await store.close()
  }
  return { cwd, seqs }
}

const config = (cwd: string, relay = '') => writeFileSync(join(cwd, 'interlock.toml'), `[store]\npath = "journal.db"\n${relay}`)
const json = (stdout: string) => JSON.parse(stdout)

describe('interlock outbox verify and relay keys', () => {
  it('checks receipts against the [relay] key (public half only, no passphrase): its own pass, another key fails naming the record', async () => {
    const { cwd, seqs } = await folder([
      { key: relay1, relay: 'relay-1' },
      { key: rogue, relay: 'relay-9' },
      // Claims to be relay-1, signed with another key.
      { key: rogue, relay: 'relay-1' },
    ])
    config(cwd, '[relay]\nid = "relay-1"\nkey = "relay-1.relay.key"\n')
    const run = await interlock(['outbox', 'verify'], { cwd })
    expect(run.code).toBe(5)
    expect(run.stdout).toContain(`Relay signatures checked against relay-1 ([relay] key ${join(cwd, 'relay-1.relay.key')}).`)
    expect(run.stdout).toContain('1 relay receipts valid, 2 invalid, 0 unchecked')
    expect(run.stderr).toContain(`journal "orders" record ${seqs[1]} (COMMITTED): the receipt is signed by relay relay-9 with key ${rogue.publicKey}, which is not a trusted relay key`)
    expect(run.stderr).toContain(`journal "orders" record ${seqs[2]} (COMMITTED): the receipt signed by relay relay-1 does not verify with its trusted key`)

    const machine = await interlock(['outbox', 'verify', '--json'], { cwd })
    expect(machine.code).toBe(5)
    expect(json(machine.stdout).error).toMatchObject({ code: 'E_INTEGRITY', context: { report: { receipts: { valid: 1, invalid: 2 }, relayKeys: [{ name: 'relay-1', publicKey: relay1.publicKey }] } } })

    // Trusting the other key too, with --relay-key, every receipt verifies.
    const both = await interlock(['outbox', 'verify', '--json', '--relay-key', `rogue=${rogue.publicKey}`], { cwd })
    expect(both.code, both.stderr).toBe(0)
    expect(json(both.stdout)).toMatchObject({ ok: true, receipts: { valid: 3, invalid: 0, unchecked: 0 } })
  })

  it('without any relay key says receipts were not checked, and passes on the rest', async () => {
    const { cwd } = await folder([{ key: rogue, relay: 'relay-9' }])
    config(cwd)
    const run = await interlock(['outbox', 'verify'], { cwd })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain('Relay signatures not checked: no relay key is configured ([relay] key in interlock.toml) or given (--relay-key).')
    expect(run.stdout).toContain('OK: every chain, transition, effect id and operator signature verifies; relay signatures were not checked.')
    const machine = await interlock(['outbox', 'verify', '--json'], { cwd })
    expect(json(machine.stdout)).toMatchObject({ ok: true, receipts: { unchecked: 1 }, relayKeys: [] })
  })

  it('refuses a [relay] key it cannot read or that is not a relay key, and a malformed --relay-key, naming it', async () => {
    const { cwd } = await folder([])
    config(cwd, '[relay]\nkey = "missing.relay.key"\n')
    const missing = await interlock(['outbox', 'verify'], { cwd })
    expect(missing.code).toBe(3)
    expect(missing.stderr).toContain(`[relay] key ${join(cwd, 'missing.relay.key')} cannot be read to check relay receipts`)
    config(cwd, '[relay]\nkey = "alice.operator.key"\n')
    const wrongKind = await interlock(['outbox', 'verify'], { cwd })
    expect(wrongKind.code).toBe(3)
    expect(wrongKind.stderr).toContain(`[relay] key ${join(cwd, 'alice.operator.key')} holds an operator key, not a relay key`)
    config(cwd)
    const malformed = await interlock(['outbox', 'verify', '--relay-key', 'relay-1'], { cwd })
    expect(malformed.code).toBe(2)
    expect(malformed.stderr).toContain('--relay-key relay-1 is not <name>=ed25519:<base64url>')
  })
})
