/**
 * The operator's commands through the built binary, on a real SQLite journal:
 * keygen, list, status, release (quorum, confirmation, key mode refusal,
 * encrypted keys, deny), resolve, compensate, show, verify and export.
 */
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { Gate } from '../../src/core/gate.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { openStore } from '../../src/core/stores/open.js'
import { assertCliBuilt, interlock, type Run } from '../helpers/cli.js'
import { CountingTarget } from '../helpers/counting-target.js'

beforeAll(assertCliBuilt)

const json = (run: Run) => JSON.parse(run.stdout)
const BOB = { BOB_PASS: 'correct horse battery staple' }
const bobKey = (cwd: string) => ['--key', join(cwd, 'bob.operator.key'), '--passphrase-env', 'BOB_PASS']

interface Setup {
  cwd: string
  held: string
  /** For two operators releasing at once, from two processes. */
  race: string
  small: string
  denied: string
  ambiguous: string
}

async function setup(): Promise<Setup> {
  const cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-outbox-'))
  const keys: Record<string, string> = {}
  for (const name of ['alice', 'bob']) {
    // bob's key is encrypted at rest: his commands pass --passphrase-env.
    const encrypt = name === 'bob' ? ['--passphrase-env', 'BOB_PASS'] : []
    const run = await interlock(['operator', 'keygen', '--name', name, '--json', ...encrypt], { cwd, env: BOB })
    expect(run.code, run.stderr).toBe(0)
    keys[name] = json(run).publicKey
  }
  const config = `
[store]
path = "journal.db"

[targets.refunds]
type = "http"
tier = 1
url = "http://127.0.0.1:9/refunds"

[targets.mail]
type = "http"
tier = 3
url = "http://127.0.0.1:9/mail"

[[operators]]
name = "alice"
public_key = "${keys.alice}"

[[operators]]
name = "bob"
public_key = "${keys.bob}"

[[policy.rules]]
name = "large-refunds"
target = "refunds"
quorum = 2
release_ttl = "15m"
when = [{ arg = "amount", above = "500.00", currency = "USD" }]
`
  writeFileSync(join(cwd, 'interlock.toml'), config)
  const parsed = parseConfig(config, { file: join(cwd, 'interlock.toml'), env: {} })
  // The agent's side, in process: the same journal, the same policy.
  const store = await openStore(parsed.store)
  const mail = new CountingTarget('mail', 3)
  mail.faults.push({ kind: 'unknown' })
  const gate = new Gate({ store, targets: [new CountingTarget('refunds', 1), mail], policy: new RulesPolicy(parsed.policy.rules), retry: { maxAttempts: 1, backoffMs: 0 } })
  const refund = (amount: string) => gate.submit({ thread: 'agent-1', target: 'refunds', action: 'refund', args: { amount, currency: 'USD' }, premises: { charge: 'ch_1' } })
  const held = await refund('900.00')
  const race = await refund('1000.00')
  const small = await refund('12.00')
  const denied = await refund('700.00')
  const ambiguous = await gate.submit({ thread: 'mailer', target: 'mail', action: 'send', args: { to: 'a@example.com' } })
  expect([held.status, race.status, small.status, denied.status, ambiguous.status]).toEqual(['held', 'held', 'committed', 'held', 'ambiguous'])
  await gate.close()
  await store.close()
  return { cwd, held: held.effectId, race: race.effectId, small: small.effectId, denied: denied.effectId, ambiguous: ambiguous.effectId }
}

describe('interlock operator keygen / relay keygen', () => {
  it('writes a 0600 key file, prints the [[operators]] table, and never overwrites without --force', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-keys-'))
    const run = await interlock(['operator', 'keygen', '--name', 'alice', '--json'], { cwd })
    expect(run.code, run.stderr).toBe(0)
    const out = json(run)
    expect(out).toMatchObject({ kind: 'operator', name: 'alice', path: join(cwd, 'alice.operator.key'), mode: '0600', encrypted: false })
    expect(out.publicKey).toMatch(/^ed25519:[A-Za-z0-9_-]{43}$/)
    expect(out.toml).toBe(`[[operators]]\nname = "alice"\npublic_key = "${out.publicKey}"`)
    expect(statSync(out.path).mode & 0o777).toBe(0o600)

    const again = await interlock(['operator', 'keygen', '--name', 'alice'], { cwd })
    expect(again.code).toBe(6)
    expect(again.stderr).toContain('E_KEY_EXISTS')

    const human = await interlock(['relay', 'keygen', '--name', 'relay-1'], { cwd })
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toMatch(/Public key: ed25519:/)
    expect(statSync(join(cwd, 'relay-1.relay.key')).mode & 0o777).toBe(0o600)
  })

  it('encrypts with a passphrase from the environment', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-keys-'))
    const run = await interlock(['operator', 'keygen', '--name', 'carol', '--passphrase-env', 'PASS', '--json'], { cwd, env: { PASS: 'open sesame' } })
    expect(run.code, run.stderr).toBe(0)
    expect(json(run).encrypted).toBe(true)
    expect(JSON.parse(readFileSync(join(cwd, 'carol.operator.key'), 'utf8')).encrypted.kdf).toBe('scrypt')
    const unset = await interlock(['operator', 'keygen', '--name', 'dave', '--passphrase-env', 'NOPE'], { cwd })
    expect(unset.code).toBe(2)
  })
})

describe('interlock outbox', () => {
  let s: Setup
  beforeAll(async () => {
    s = await setup()
  }, 60_000)

  it('list filters by state, as a table and as JSON with paging', async () => {
    const run = await interlock(['outbox', 'list', '--state', 'HELD', '--json'], { cwd: s.cwd })
    expect(run.code, run.stderr).toBe(0)
    const page = json(run)
    expect(page).toMatchObject({ page: 1, more: false })
    expect(page.effects.map((e: { effectId: string }) => e.effectId).sort()).toEqual([s.held, s.race, s.denied].sort())
    const paged = json(await interlock(['outbox', 'list', '--limit', '1', '--page', '2', '--json'], { cwd: s.cwd }))
    expect(paged).toMatchObject({ page: 2, limit: 1, more: true })
    expect(paged.effects).toHaveLength(1)
    const table = await interlock(['outbox', 'list', '--target', 'refunds'], { cwd: s.cwd })
    expect(table.stdout).toContain(s.small)
    expect(table.stdout).toContain('Page 1, the last.')
    expect(table.stdout.trim().split('\n')).toHaveLength(6)
    const future = json(await interlock(['outbox', 'list', '--since', '2999-01-01', '--json'], { cwd: s.cwd }))
    expect(future.effects).toEqual([])
    expect((await interlock(['outbox', 'list', '--since', 'yesterday'], { cwd: s.cwd })).code).toBe(2)
  })

  it('status counts per state and names what waits for an operator', async () => {
    const run = await interlock(['outbox', 'status', '--json'], { cwd: s.cwd })
    expect(run.code, run.stderr).toBe(0)
    const st = json(run)
    expect(st.counts).toMatchObject({ HELD: 3, COMMITTED: 1, AMBIGUOUS: 1 })
    // The rule and why it holds each one.
    for (const h of st.held as { why: string }[]) expect(h.why).toMatch(/^rule "large-refunds": args\.amount \d+\.\d\d USD is above 500\.00$/)
    expect(st.held).toHaveLength(3)
    expect(st.ambiguous[0].effectId).toBe(s.ambiguous)
    expect(st.relays).toEqual([])
    const human = await interlock(['outbox', 'status'], { cwd: s.cwd })
    expect(human.stdout).toContain('HELD, waiting for a release')
    expect(human.stdout).toContain('No relay heartbeats recorded.')
  })

  it('release needs a terminal or --yes, refuses a key file others can read, then signs up to the quorum', async () => {
    const alice = join(s.cwd, 'alice.operator.key')
    const noTty = await interlock(['outbox', 'release', s.held, '--key', alice], { cwd: s.cwd })
    expect(noTty.code).toBe(2)
    expect(noTty.stderr).toContain('--yes')
    expect(noTty.stdout).toContain('Held by  rule "large-refunds": args.amount 900.00 USD is above 500.00')

    chmodSync(alice, 0o644)
    const open = await interlock(['outbox', 'release', s.held, '--yes', '--key', alice], { cwd: s.cwd })
    expect(open.code).toBe(3)
    expect(open.stderr).toContain('E_KEY_MODE')
    expect(open.stderr).toContain(`chmod 600 ${alice}`)
    chmodSync(alice, 0o600)

    const first = await interlock(['outbox', 'release', s.held, '--yes', '--json'], { cwd: s.cwd, env: { INTERLOCK_OPERATOR_KEY: alice } })
    expect(first.code, first.stderr).toBe(0)
    expect(json(first)).toMatchObject({ effectId: s.held, state: 'HELD', operator: 'alice', quorum: { have: 1, need: 2, signers: ['alice'] } })
    expect(json(first).release.statement).toMatchObject({ kind: 'release', effectId: s.held, operator: 'alice', rule: 'large-refunds' })

    const bobWithout = await interlock(['outbox', 'release', s.held, '--yes', '--key', join(s.cwd, 'bob.operator.key')], { cwd: s.cwd })
    expect(bobWithout.code).toBe(2)
    expect(bobWithout.stderr).toContain('E_KEY_PASSPHRASE')
    const second = await interlock(['outbox', 'release', s.held, '--yes', ...bobKey(s.cwd)], { cwd: s.cwd, env: BOB })
    expect(second.code, second.stderr).toBe(0)
    expect(second.stdout).toContain('quorum met (alice, bob)')
    expect(second.stdout).toContain('AUTHORIZED')

    const late = await interlock(['outbox', 'release', s.held, '--yes', '--key', alice], { cwd: s.cwd })
    expect(late.code).toBe(6)
  })

  it('two operators releasing at once, from two processes: one AUTHORIZED with both signatures', async () => {
    const [a, b] = await Promise.all([
      interlock(['outbox', 'release', s.race, '--yes', '--json', '--key', join(s.cwd, 'alice.operator.key')], { cwd: s.cwd }),
      interlock(['outbox', 'release', s.race, '--yes', '--json', ...bobKey(s.cwd)], { cwd: s.cwd, env: BOB }),
    ])
    expect([a.code, b.code], a.stderr + b.stderr).toEqual([0, 0])
    expect([json(a).state, json(b).state]).toContain('AUTHORIZED')
    const d = json(await interlock(['outbox', 'show', s.race, '--json'], { cwd: s.cwd }))
    const authorized = d.history.filter((r: { state: string }) => r.state === 'AUTHORIZED')
    expect(authorized).toHaveLength(1)
    expect([...authorized[0].data.signers].sort()).toEqual(['alice', 'bob'])
  })

  it('release --deny rejects with the signed reason', async () => {
    const run = await interlock(['outbox', 'release', s.denied, '--deny', '--reason', 'refunded by hand', '--yes', '--json', ...bobKey(s.cwd)], { cwd: s.cwd, env: BOB })
    expect(run.code, run.stderr).toBe(0)
    expect(json(run)).toMatchObject({ state: 'REJECTED', operator: 'bob', denial: { statement: { kind: 'denial', reason: 'refunded by hand' } } })
  })

  it('resolve signs what happened to an AMBIGUOUS effect, and refuses any other', async () => {
    const wrong = await interlock(['outbox', 'resolve', s.small, '--applied', '--yes', '--key', join(s.cwd, 'alice.operator.key')], { cwd: s.cwd })
    expect(wrong.code).toBe(6)
    const none = await interlock(['outbox', 'resolve', s.ambiguous, '--yes', '--key', join(s.cwd, 'alice.operator.key')], { cwd: s.cwd })
    expect(none.code).toBe(2)
    const run = await interlock(['outbox', 'resolve', s.ambiguous, '--applied', '--yes', '--json', '--key', join(s.cwd, 'alice.operator.key')], { cwd: s.cwd })
    expect(run.code, run.stderr).toBe(0)
    expect(json(run)).toMatchObject({ state: 'COMMITTED', operator: 'alice', resolution: { statement: { kind: 'resolution', applied: true } } })
  })

  it('compensate says when a target cannot undo its effects', async () => {
    const run = await interlock(['outbox', 'compensate', s.small], { cwd: s.cwd })
    expect(run.code).toBe(6)
    expect(run.stderr).toContain('cannot be compensated')
    const missing = await interlock(['outbox', 'compensate', 'f'.repeat(64), '--json'], { cwd: s.cwd })
    expect(missing.code).toBe(7)
    expect(json(missing).error.code).toBe('E_NOT_FOUND')
  })

  it('show gives the whole history with every signature', async () => {
    const run = await interlock(['outbox', 'show', s.held, '--json'], { cwd: s.cwd })
    expect(run.code, run.stderr).toBe(0)
    const d = json(run)
    expect(d.history.map((r: { state: string }) => r.state)).toEqual(['PROPOSED', 'HELD', 'HELD', 'HELD', 'AUTHORIZED'])
    expect(d.statements.map((x: { statement: { operator: string } }) => x.statement.operator)).toEqual(['alice', 'bob', 'alice', 'bob'])
    expect(d).toMatchObject({ rule: 'large-refunds', amount: '900.00 USD' })
    const human = await interlock(['outbox', 'show', s.held], { cwd: s.cwd })
    expect(human.stdout).toContain('Signed   release by operator alice')
  })

  it('verify passes on the store and on an export, and fails (exit 5) on a tampered export', async () => {
    const store = await interlock(['outbox', 'verify', '--json'], { cwd: s.cwd })
    expect(store.code, store.stderr).toBe(0)
    expect(json(store)).toMatchObject({ ok: true, effects: 5, signatures: { valid: 10, invalid: 0 } })

    const file = join(s.cwd, 'audit.jsonl')
    const exported = await interlock(['outbox', 'export', '--out', file, '--json'], { cwd: s.cwd })
    expect(exported.code, exported.stderr).toBe(0)
    expect(json(exported)).toMatchObject({ effects: 5 })
    expect((await interlock(['outbox', 'export', '--out', file], { cwd: s.cwd })).code).toBe(1)
    const fromFile = await interlock(['outbox', 'verify', '--file', file], { cwd: s.cwd })
    expect(fromFile.code, fromFile.stderr).toBe(0)
    // The inline gate here holds no relay key: what it wrote is unsigned, and verify says it could not check it.
    expect(fromFile.stdout).toContain('OK: every chain, transition, effect id and operator signature verifies; relay signatures were not checked.')

    writeFileSync(file, readFileSync(file, 'utf8').replace('"amount":"900.00"', '"amount":"9000.00"'))
    const bad = await interlock(['outbox', 'verify', '--file', file, '--json'], { cwd: s.cwd })
    expect(bad.code).toBe(5)
    const err = json(bad).error
    expect(err.code).toBe('E_INTEGRITY')
    expect(err.message).toMatch(/record 1 .*altered/)
  })

  it('every outbox and keygen command has a description and an example in --help', async () => {
    for (const id of ['outbox release', 'outbox resolve', 'outbox compensate', 'outbox status', 'outbox list', 'outbox show', 'outbox verify', 'outbox export', 'operator keygen', 'relay keygen']) {
      const run = await interlock([...id.split(' '), '--help'], { cwd: s.cwd })
      expect(run.code, id).toBe(0)
      expect(run.stdout, id).toContain('EXAMPLES')
      expect(run.stdout, id).toContain('Exit codes')
    }
  })
})

describe('with no interlock.toml: the embedded default (./interlock.db)', () => {
  let cwd: string
  let effectId: string
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-default-'))
    // An agent's gate on the embedded default's journal, as openInterlock({ allowMissing: true }) would use.
    const store = await openStore({ kind: 'sqlite', path: join(cwd, 'interlock.db') })
    const gate = new Gate({ store, targets: [new CountingTarget('refunds', 1)] })
    const outcome = await gate.submit({ thread: 'agent-1', target: 'refunds', action: 'refund', args: { amount: '12.00' } })
    expect(outcome.status).toBe('committed')
    effectId = outcome.effectId
    await gate.close()
    await store.close()
  }, 60_000)

  it('outbox status, list, show, verify and export read it, and say on stderr which journal they read', async () => {
    const runs = {
      status: await interlock(['outbox', 'status', '--json'], { cwd }),
      list: await interlock(['outbox', 'list', '--json'], { cwd }),
      show: await interlock(['outbox', 'show', effectId.slice(0, 8), '--json'], { cwd }),
      verify: await interlock(['outbox', 'verify', '--json'], { cwd }),
      export: await interlock(['outbox', 'export', '--out', 'journal.jsonl', '--json'], { cwd }),
    }
    for (const [name, run] of Object.entries(runs)) expect(run.code, `${name}: ${run.stdout}${run.stderr}`).toBe(0)
    expect(json(runs.status).counts.COMMITTED).toBe(1)
    expect(json(runs.list).effects.map((e: { effectId: string }) => e.effectId)).toEqual([effectId])
    expect(json(runs.show)).toMatchObject({ effect: { id: effectId }, state: 'COMMITTED' })
    expect(json(runs.verify)).toMatchObject({ ok: true, effects: 1 })
    expect(json(runs.export)).toMatchObject({ effects: 1, path: 'journal.jsonl' })
    expect(readFileSync(join(cwd, 'journal.jsonl'), 'utf8')).toContain(effectId)

    const human = await interlock(['outbox', 'list'], { cwd })
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toContain(effectId)
    expect(human.stderr).toBe(`No interlock.toml found: using the embedded default, the SQLite journal ${join(cwd, 'interlock.db')} and no targets.\n`)
  })

  it('config show shows it; relay and outbox submit still need a file, and the relay says why', async () => {
    const shown = await interlock(['config', 'show', '--json'], { cwd })
    expect(shown.code, shown.stderr).toBe(0)
    expect(json(shown)).toMatchObject({ store: { kind: 'sqlite', path: join(cwd, 'interlock.db') }, targets: {} })

    const relay = await interlock(['relay'], { cwd })
    expect(relay.code).toBe(3)
    expect(relay.stderr).toBe(
      `Error (E_CONFIG): no interlock.toml in ${cwd}: the relay needs one, for the targets it sends effects to (the embedded default has none)\n` +
        'Try this: Write one with `interlock init`, or pass --config <file> (or set INTERLOCK_CONFIG) to use another.\n',
    )
    const submit = await interlock(['outbox', 'submit', '--target', 'refunds', '--action', 'refund'], { cwd })
    expect(submit.code).toBe(3)
    expect(submit.stderr).toContain(`Error (E_CONFIG): no interlock.toml in ${cwd}\n`)
  })

  it('in a folder with no journal either, says it made an empty one', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'interlock-e2e-default-'))
    const run = await interlock(['outbox', 'status'], { cwd: empty })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stderr).toContain(`the SQLite journal ${join(empty, 'interlock.db')} (created now, empty) and no targets.`)
    expect(run.stdout).toMatch(/^COMMITTED\s+0$/m)
  })
})

describe('interlock outbox submit of an effect already COMMITTED', () => {
  it('is answered by the journal: via journal, committed by its apply then, nothing sent now', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-resubmit-'))
    const config = '[store]\npath = "journal.db"\n\n[targets.refunds]\ntype = "http"\ntier = 1\nurl = "http://127.0.0.1:9/refunds"\n'
    writeFileSync(join(cwd, 'interlock.toml'), config)
    const store = await openStore(parseConfig(config, { file: join(cwd, 'interlock.toml'), env: {} }).store)
    const refunds = new CountingTarget('refunds', 1)
    const gate = new Gate({ store, targets: [refunds] })
    // The effect `outbox submit` names: its thread, target, action and args.
    const first = await gate.submit({ thread: 'interlock-cli', target: 'refunds', action: 'refund', args: { charge: 'ch_1' } })
    expect(first).toMatchObject({ status: 'committed', via: 'apply' })
    await gate.close()
    await store.close()

    const args = ['outbox', 'submit', '--target', 'refunds', '--action', 'refund', '--arg', 'charge=ch_1', '--wait', '--timeout', '5s']
    const machine = await interlock([...args, '--json'], { cwd })
    expect(machine.code, machine.stderr).toBe(0)
    expect(json(machine)).toMatchObject({
      effectId: first.effectId,
      created: false,
      state: 'COMMITTED',
      outcome: { status: 'committed', effectId: first.effectId, via: 'journal', committedBy: 'apply', receipt: { applied: first.effectId } },
    })
    const human = await interlock(args, { cwd })
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toBe(
      `Already in the outbox: effect ${first.effectId} is COMMITTED; nothing new was journaled.\n` +
        'Outcome: committed before this submit; nothing was sent for it.\n',
    )
    expect(refunds.calls.get(first.effectId)).toBe(1)
  })
})
