/**
 * `outbox verify` and `outbox anchor` through the built binary, on a real
 * SQLite journal edited as anyone with write access to the file could:
 * records rewritten, the hash chain recomputed, heads and effects rows
 * brought into line. Each forgery ends in exit 5 naming its journal and
 * record; the anchor catches the one nothing inside the store can show.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/canonical-json.js'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { Gate, type GateOptions } from '../../src/core/gate.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { releaseEffect } from '../../src/core/outbox/release.js'
import { systemClock } from '../../src/core/clock.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { CountingTarget } from '../helpers/counting-target.js'
import { sqliteOutbox, type OutboxHarness } from '../helpers/outbox-stores.js'
import { flipByte, forge, withData } from '../helpers/tamper.js'

beforeAll(assertCliBuilt)

const relayKey = generateKeyPair('relay', 'relay-1')
const alice = generateKeyPair('operator', 'alice')
const bob = generateKeyPair('operator', 'bob')
const RULES = `
[[operators]]
name = "alice"
public_key = "${alice.publicKey}"

[[operators]]
name = "bob"
public_key = "${bob.publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "payments"
quorum = 2
release_ttl = "15m"
when = [{ arg = "amount", above = "500.00", currency = "USD" }]
`
const policy = new RulesPolicy([{ name: 'large-refunds', target: 'payments', when: [{ arg: 'amount', above: '500.00', currency: 'USD' }], quorum: 2, releaseTtlMs: 900_000 }])
const refund = (amount: string) => ({ thread: 'agent-1', target: 'payments', action: 'refund', args: { amount, currency: 'USD', to: 'acct_1' }, premises: { charge: 'ch_1' } })

interface Folder {
  h: OutboxHarness
  cwd: string
  /** Writes interlock.toml, with the [relay] key or without. */
  config(options?: { relayKey?: boolean }): void
  /** Journals through an inline gate on the folder's journal. */
  submit(inputs: ReturnType<typeof refund>[], gate?: Partial<GateOptions>): Promise<string[]>
}

async function folder(): Promise<Folder> {
  const h = await sqliteOutbox()
  const cwd = dirname((h.config as { path: string }).path)
  writeKeyFile(join(cwd, 'relay-1.relay.key'), relayKey)
  writeKeyFile(join(cwd, 'alice.operator.key'), alice)
  const f: Folder = {
    h,
    cwd,
    config: (options = {}) =>
      writeFileSync(join(cwd, 'interlock.toml'), `[store]\npath = "journal.db"\n${options.relayKey ? '\n[relay]\nid = "relay-1"\nkey = "relay-1.relay.key"\n' : ''}${RULES}`),
    submit: async (inputs, over = {}) => {
      const store = await h.open()
      const gate = new Gate({ store, targets: [new CountingTarget('payments', 1)], policy, ...over })
      try {
        const ids: string[] = []
        for (const i of inputs) ids.push((await gate.submit(i)).effectId)
        return ids
      } finally {
        await gate.close()
        await store.close()
      }
    },
  }
  f.config()
  return f
}

describe('interlock outbox verify against a journal edited behind its back', () => {
  it('args rewritten under the effect id, chain and effects row made to match: exit 5 naming the record', async () => {
    const f = await folder()
    const [id] = await f.submit([refund('12.00')])
    expect((await interlock(['outbox', 'verify'], { cwd: f.cwd })).code).toBe(0)
    await forge(f.h, (rows) => rows.map((r) => (r.state === 'PROPOSED' ? withData(r, (d) => ({ ...d, effect: { ...d.effect, args: { ...d.effect.args, amount: '99999.00', to: 'acct_mallory' } } })) : r)))
    const run = await interlock(['outbox', 'verify'], { cwd: f.cwd })
    expect(run.code).toBe(5)
    expect(run.stderr).toMatch(new RegExp(`journal "agent-1" record 1 \\(PROPOSED\\) proposes effect ${id}, but its thread, target, action, args and key hash to [0-9a-f]{64}: the effect was rewritten after it was proposed`))
  })

  it('after a valid two-operator release, the effects row\'s args edited, the journal untouched: exit 5 naming the effect and the field', async () => {
    const f = await folder()
    const [id] = await f.submit([refund('900.00')])
    const store = await f.h.open()
    try {
      for (const key of [alice, bob]) await releaseEffect({ store, operators: [{ name: 'alice', publicKey: alice.publicKey }, { name: 'bob', publicKey: bob.publicKey }], policy, key, clock: systemClock }, id!)
      expect((await store.get(id!))?.state).toBe('AUTHORIZED')
      expect((await interlock(['outbox', 'verify'], { cwd: f.cwd })).code).toBe(0)
      const row = (await store.get(id!))!.effect
      await f.h.exec('UPDATE effects SET effect = ? WHERE id = ?', [canonicalJson({ ...row, args: { ...row.args, to: 'acct_mallory' } }), id])
    } finally {
      await store.close()
    }
    const run = await interlock(['outbox', 'verify'], { cwd: f.cwd })
    expect(run.code).toBe(5)
    expect(run.stderr).toContain(`effect ${id}: its effects row disagrees with its journal in args`)
    expect(run.stderr).not.toContain('acct_mallory')
  })

  it('one flipped byte in a record: verify, show, and verify of an export exit 5 naming journal and record', async () => {
    const f = await folder()
    const [id] = await f.submit([refund('12.00')])
    const file = join(f.cwd, 'journal.jsonl')
    expect((await interlock(['outbox', 'export', '--out', file], { cwd: f.cwd })).code).toBe(0)
    await f.h.rewrite((await f.h.rows()).map((r) => (r.seq === 3 ? flipByte(r) : r)))

    const run = await interlock(['outbox', 'verify', '--json'], { cwd: f.cwd })
    expect(run.code).toBe(5)
    const error = JSON.parse(run.stdout).error
    expect(error).toMatchObject({ code: 'E_INTEGRITY', context: { report: { firstBad: { journal: 'agent-1', seq: 3 } } } })
    expect(error.message).toMatch(/journal "agent-1" record 3 has data that is not JSON .*; the record was altered or damaged; verification stopped there/)

    const show = await interlock(['outbox', 'show', id!], { cwd: f.cwd })
    expect(show.code).toBe(5)
    expect(show.stderr).toContain('journal "agent-1" record 3 has data that is not JSON')

    const lines = readFileSync(file, 'utf8').split('\n')
    lines[3] = lines[3]!.replace('"data":{', '"data":[')
    writeFileSync(file, lines.join('\n'))
    const fromFile = await interlock(['outbox', 'verify', '--file', file], { cwd: f.cwd })
    expect(fromFile.code).toBe(5)
    expect(fromFile.stderr).toContain(`export file ${file} line 4 (journal "agent-1" record 3) is not JSON`)
  })

  it('an authorization the policy in force would not have given: exit 5 naming the rule', async () => {
    const f = await folder()
    // A gate built by hand without the config's policy (or anyone who can write the tables).
    const [id] = await f.submit([refund('900.00')], { policy: undefined })
    const run = await interlock(['outbox', 'verify'], { cwd: f.cwd })
    expect(run.code).toBe(5)
    expect(run.stderr).toContain(`journal "agent-1" record 2 (AUTHORIZED) authorizes effect ${id} without operators, but rule "large-refunds" of the policy in force holds it`)
  })

  it('a forged DISPATCHED → FAILED with the chain recomputed: exit 5 with the [relay] key, unchecked without it', async () => {
    const f = await folder()
    const [id] = await f.submit([refund('12.00')], { signing: { key: relayKey, id: 'relay-1' } })
    f.config({ relayKey: true })
    expect((await interlock(['outbox', 'verify'], { cwd: f.cwd })).code).toBe(0)
    await forge(f.h, (rows) => rows.map((r) => (r.state === 'COMMITTED' ? { ...r, state: 'FAILED', data: canonicalJson({ reason: 'card declined' }) } : r)))

    const run = await interlock(['outbox', 'verify'], { cwd: f.cwd })
    expect(run.code).toBe(5)
    expect(run.stdout).toContain('Records written by relays and gates: 3 signed and valid (3 under seals), 0 invalid, 1 unsigned, 0 unchecked; seals: 2 valid, 0 invalid, 0 unchecked.')
    expect(run.stderr).toContain(`journal "agent-1" record 4 of effect ${id} carries no seal or signature of a trusted writer and no operator's signed act`)

    f.config()
    const blind = await interlock(['outbox', 'verify'], { cwd: f.cwd })
    expect(blind.code, blind.stderr).toBe(0)
    expect(blind.stdout).toContain('Relay signatures not checked: no relay key is configured')
    expect(blind.stdout).toContain('0 signed and valid (0 under seals), 0 invalid, 0 unsigned, 4 unchecked; seals: 0 valid, 0 invalid, 2 unchecked.')
  })
})

describe('interlock outbox anchor', () => {
  it('signs the heads; a journal cut back with head and rows rewritten passes verify but not verify --anchor', async () => {
    const f = await folder()
    const [, second] = await f.submit([refund('12.00'), refund('13.00')], { signing: { key: relayKey, id: 'relay-1' } })
    f.config({ relayKey: true })
    const anchorFile = join(f.cwd, 'anchor.json')
    const made = await interlock(['outbox', 'anchor', '--out', anchorFile, '--key', join(f.cwd, 'alice.operator.key'), '--json'], { cwd: f.cwd })
    expect(made.code, made.stderr).toBe(0)
    expect(JSON.parse(made.stdout)).toMatchObject({ journals: 1, records: 8, signer: 'alice', role: 'operator' })
    expect((await interlock(['outbox', 'verify', '--anchor', anchorFile], { cwd: f.cwd })).code).toBe(0)

    await forge(f.h, (rows) => rows.filter((r) => !(r.effect_id === second && r.state === 'COMMITTED')))
    const inside = await interlock(['outbox', 'verify'], { cwd: f.cwd })
    expect(inside.code, inside.stderr).toBe(0)
    const run = await interlock(['outbox', 'verify', '--anchor', anchorFile], { cwd: f.cwd })
    expect(run.code).toBe(5)
    expect(run.stderr).toContain(`journal "agent-1" ends at record 7, but the anchor ${anchorFile} (signed by operator alice at `)

    const anchor = JSON.parse(readFileSync(anchorFile, 'utf8'))
    anchor.heads[0].seq = 7
    writeFileSync(anchorFile, JSON.stringify(anchor))
    const altered = await interlock(['outbox', 'verify', '--anchor', anchorFile], { cwd: f.cwd })
    expect(altered.code).toBe(5)
    expect(altered.stderr).toContain(`anchor file ${anchorFile} lists other heads than its signature covers (altered)`)
    expect((await interlock(['outbox', 'verify', '--anchor', join(f.cwd, 'missing.json')], { cwd: f.cwd })).code).toBe(7)
  })

  it('refuses to anchor journals that do not verify, or unsigned records after signed ones unless told to cover them', async () => {
    const f = await folder()
    // Signed by an upgraded gate, then one written by a writer without the key, in the same journal.
    await f.submit([refund('12.00')], { signing: { key: relayKey, id: 'relay-1' } })
    await f.submit([refund('13.00')])
    f.config({ relayKey: true })
    const key = ['--key', join(f.cwd, 'alice.operator.key')]
    const refused = await interlock(['outbox', 'anchor', '--out', join(f.cwd, 'a.json'), ...key], { cwd: f.cwd })
    expect(refused.code).toBe(5)
    expect(refused.stderr).toContain('not anchored: the journals do not verify')
    expect(refused.stderr).toContain('--cover-unsigned')
    const covered = await interlock(['outbox', 'anchor', '--out', join(f.cwd, 'a.json'), ...key, '--cover-unsigned'], { cwd: f.cwd })
    expect(covered.code, covered.stderr).toBe(0)
    expect(covered.stdout).toContain('It vouches for 2 records that carry no relay signature.')
    const verified = await interlock(['outbox', 'verify', '--anchor', join(f.cwd, 'a.json')], { cwd: f.cwd })
    expect(verified.code, verified.stderr).toBe(0)
    expect(verified.stdout).toContain('2 covered by the anchor')

    await forge(f.h, (rows) => rows.map((r) => (r.seq === 1 ? withData(r, (d) => ({ ...d, effect: { ...d.effect, args: { ...d.effect.args, amount: '99999.00' } } })) : r)))
    const tampered = await interlock(['outbox', 'anchor', '--out', join(f.cwd, 'b.json'), ...key, '--cover-unsigned'], { cwd: f.cwd })
    expect(tampered.code).toBe(5)
    expect(tampered.stderr).toContain('the effect was rewritten after it was proposed')
  })
})
