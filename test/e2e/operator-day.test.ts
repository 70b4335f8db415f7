/**
 * What an operator hits on a real day, through the built binary on a real
 * SQLite journal: submitting from the terminal, effect id prefixes, --state
 * in any case, read-only commands without targets' credentials, the reason of
 * a fail-safe hold, `check` on an unset store path, and output of several MB
 * through a pipe to a real child process, complete.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { effectId } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { openInterlock } from '../../src/core/interlock.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { openStore } from '../../src/core/stores/open.js'
import { assertCliBuilt, interlock, type Run } from '../helpers/cli.js'
import { CountingTarget } from '../helpers/counting-target.js'

beforeAll(assertCliBuilt)

const json = (run: Run) => JSON.parse(run.stdout)

// `chat` needs SLACK_TOKEN, which no test here sets: only what makes that target may need it.
const CONFIG = `
[store]
path = "journal.db"

[targets.refunds]
type = "http"
tier = 1
url = "http://127.0.0.1:9/refunds"

[targets.chat]
type = "slack"
token = "\${SLACK_TOKEN}"

[[operators]]
name = "alice"
public_key = "${generateKeyPair('operator', 'alice').publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "refunds"
when = [{ arg = "amount", above = "500.00" }]
`

function folder(config = CONFIG): string {
  const cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-operator-'))
  writeFileSync(join(cwd, 'interlock.toml'), config)
  return cwd
}

/** Two effects whose ids share their first four hex characters, found by computing ids, not by journaling thousands. */
function collidingArgs(): [Record<string, string>, Record<string, string>] {
  const seen = new Map<string, number>()
  for (let i = 0; ; i++) {
    const prefix = effectId({ thread: 'interlock-cli', target: 'refunds', action: 'refund', args: { n: String(i) } }).slice(0, 4)
    const j = seen.get(prefix)
    if (j !== undefined) return [{ n: String(j) }, { n: String(i) }]
    seen.set(prefix, i)
  }
}

describe('outbox submit', () => {
  it('journals from flags, a file and stdin, PROPOSED only (the relay applies the policy), and says when it was already there', async () => {
    const cwd = folder()
    const first = await interlock(['outbox', 'submit', '--target', 'refunds', '--action', 'refund', '--arg', 'amount=900.00', '--arg', 'charge=ch_1', '--json'], { cwd })
    expect(first.code, first.stderr).toBe(0)
    const r = json(first)
    // A rule holds refunds above 500.00, yet the submitter does not decide that: PROPOSED, for the relay.
    expect(r).toMatchObject({ thread: 'interlock-cli', target: 'refunds', action: 'refund', state: 'PROPOSED', created: true })
    expect(r.effectId).toBe(effectId({ thread: 'interlock-cli', target: 'refunds', action: 'refund', args: { amount: '900.00', charge: 'ch_1' } }))

    writeFileSync(join(cwd, 'effect.json'), JSON.stringify({ thread: 'ops', target: 'refunds', action: 'refund', args: { amount: '12.00' }, premises: { charge: 'ch_2' }, key: 'fix-1' }))
    const fromFile = await interlock(['outbox', 'submit', '--file', 'effect.json'], { cwd })
    expect(fromFile.code, fromFile.stderr).toBe(0)
    expect(fromFile.stdout).toMatch(/^Journaled effect [0-9a-f]{64} \(refund on refunds, thread ops\): PROPOSED\./)

    const again = await interlock(['outbox', 'submit', '--file', '-', '--json'], { cwd, stdin: JSON.stringify({ target: 'refunds', action: 'refund', args: { amount: '900.00', charge: 'ch_1' } }) })
    expect(again.code, again.stderr).toBe(0)
    expect(json(again)).toMatchObject({ effectId: r.effectId, created: false, state: 'PROPOSED' })

    const shown = await interlock(['outbox', 'show', r.effectId, '--json'], { cwd })
    expect(json(shown).history.map((h: { state: string }) => h.state)).toEqual(['PROPOSED'])
  })

  it('refuses bad input (2), an unknown target (7), and its own target without its credentials (3)', async () => {
    const cwd = folder()
    const badJson = await interlock(['outbox', 'submit', '--file', '-'], { cwd, stdin: '{"target":' })
    expect(badJson.code).toBe(2)
    expect(badJson.stderr).toContain('stdin is not JSON')
    const noAction = await interlock(['outbox', 'submit', '--target', 'refunds'], { cwd })
    expect(noAction.code).toBe(2)
    expect(noAction.stderr).toContain('no action')
    const unknown = await interlock(['outbox', 'submit', '--target', 'refundz', '--action', 'refund'], { cwd })
    expect(unknown.code).toBe(7)
    expect(unknown.stderr).toContain('Targets declared: refunds, chat')
    const chat = await interlock(['outbox', 'submit', '--target', 'chat', '--action', 'post', '--args', '{"channel":"C1","text":"hi"}'], { cwd })
    expect(chat.code).toBe(3)
    expect(chat.stderr).toContain('targets.chat.token: environment variable SLACK_TOKEN is not set')
  })
})

describe('effect ids and filters as operators type them', () => {
  it('a unique prefix finds the effect; an ambiguous one names the candidates (2); what is not an id is a usage error (2)', async () => {
    const cwd = folder()
    const [a, b] = collidingArgs()
    const ids: string[] = []
    for (const args of [a, b]) {
      const run = await interlock(['outbox', 'submit', '--target', 'refunds', '--action', 'refund', '--args', JSON.stringify(args), '--json'], { cwd })
      ids.push(json(run).effectId)
    }
    expect(ids[0]!.slice(0, 4)).toBe(ids[1]!.slice(0, 4))

    const unique = await interlock(['outbox', 'show', ids[0]!.slice(0, 12).toUpperCase(), '--json'], { cwd })
    expect(unique.code, unique.stderr).toBe(0)
    expect(json(unique).effect.id).toBe(ids[0])

    const ambiguous = await interlock(['outbox', 'show', ids[0]!.slice(0, 4)], { cwd })
    expect(ambiguous.code).toBe(2)
    expect(ambiguous.stderr).toContain('is ambiguous')
    for (const id of ids) expect(ambiguous.stderr).toContain(id)

    for (const bad of ['zz', 'abc', 'x'.repeat(64), `${ids[0]}0`]) {
      const run = await interlock(['outbox', 'show', bad], { cwd })
      expect(run.code, bad).toBe(2)
    }
    const missing = await interlock(['outbox', 'show', 'ffff'.repeat(16)], { cwd })
    expect(missing.code).toBe(7)
  })

  it('--state is case-insensitive; an unknown state is a usage error naming the states', async () => {
    const cwd = folder()
    await interlock(['outbox', 'submit', '--target', 'refunds', '--action', 'refund', '--arg', 'amount=1.00'], { cwd })
    const lower = await interlock(['outbox', 'list', '--state', 'proposed', '--state', 'Held', '--json'], { cwd })
    expect(lower.code, lower.stderr).toBe(0)
    expect(json(lower).effects).toHaveLength(1)
    const unknown = await interlock(['outbox', 'list', '--state', 'done'], { cwd })
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('PROPOSED, HELD')
  })
})

describe('read-only commands need no target credentials', () => {
  it('outbox status, list, show, verify, export and config show run with SLACK_TOKEN unset', async () => {
    const cwd = folder()
    const submitted = json(await interlock(['outbox', 'submit', '--target', 'refunds', '--action', 'refund', '--arg', 'amount=2.00', '--json'], { cwd }))
    for (const args of [['outbox', 'status'], ['outbox', 'list'], ['outbox', 'show', submitted.effectId], ['outbox', 'verify'], ['outbox', 'export', '--out', 'journal.jsonl'], ['config', 'show']]) {
      const run = await interlock(args, { cwd })
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0)
    }
    const shown = await interlock(['config', 'show'], { cwd })
    expect(shown.stderr).toContain('targets.chat.token: environment variable SLACK_TOKEN is not set')
  })
})

describe('a fail-safe hold says why', () => {
  it('outbox status shows the reason beside the rule', async () => {
    const cwd = folder()
    const config = parseConfig(CONFIG, { file: join(cwd, 'interlock.toml'), env: { SLACK_TOKEN: 'xoxb-unused' } })
    const store = await openStore(config.store)
    const gate = new Gate({ store, targets: [new CountingTarget('refunds', 1)], policy: new RulesPolicy(config.policy.rules) })
    const out = await gate.submit({ thread: 'agent-1', target: 'refunds', action: 'refund', args: { amount: 'lots' } })
    await gate.close()
    expect(out).toMatchObject({ status: 'held', rule: 'large-refunds', reason: 'args.amount is "lots", not a decimal number (held to be safe)' })

    const status = await interlock(['outbox', 'status', '--json'], { cwd })
    expect(status.code, status.stderr).toBe(0)
    expect(json(status).held).toMatchObject([{ effectId: out.effectId, why: 'rule "large-refunds": args.amount is "lots", not a decimal number (held to be safe)' }])
    const human = await interlock(['outbox', 'status'], { cwd })
    expect(human.stdout).toContain('not a decimal number')
  })
})

describe('check', () => {
  it('fails an unset or empty ${VAR} in store.path', async () => {
    for (const env of [{}, { JOURNAL_DIR: '' }] as Record<string, string>[]) {
      const cwd = folder('[store]\npath = "${JOURNAL_DIR}/journal.db"\n')
      const run = await interlock(['check', '--json'], { cwd, env })
      expect(run.code).toBe(1)
      const rows = json(run).checks
      expect(JSON.stringify(rows)).toContain('store.path: environment variable JOURNAL_DIR is not set')
    }
  })
})

describe('output of any size through a pipe', () => {
  it('a config error listing 60,000 problems prints complete --json (several MB) and, for people, fifty lines and the hint', async () => {
    const cwd = folder('[store]\npath = "journal.db"\n' + Array.from({ length: 60_000 }, (_, i) => `an_unknown_key_with_a_rather_long_name_number_${i} = ${i}\n`).join(''))
    const machine = await interlock(['config', 'show', '--json'], { cwd })
    expect(machine.code).toBe(3)
    expect(machine.stdout.length).toBeGreaterThan(4_000_000)
    const { error } = JSON.parse(machine.stdout)
    expect(error.problems).toHaveLength(60_000)
    expect(error.problems[59_999]).toBe('store.an_unknown_key_with_a_rather_long_name_number_59999: unknown key')

    const human = await interlock(['config', 'show'], { cwd })
    expect(human.code).toBe(3)
    expect(human.stderr.split('\n').filter((l) => l.startsWith('  - '))).toHaveLength(50)
    expect(human.stderr).toContain('… and 59950 more')
    expect(human.stderr.trimEnd().split('\n').pop()).toMatch(/^Try this: /)
  })

  it('outbox list --json and export --out - write several MB to a pipe, complete', async () => {
    const cwd = folder()
    const il = await openInterlock({ cwd, env: { SLACK_TOKEN: 'xoxb-unused' } })
    const body = 'x'.repeat(1_000)
    for (let start = 0; start < 5_000; start += 500) {
      await Promise.all(Array.from({ length: 500 }, (_, i) => il.outbox.submit({ thread: 'bulk', target: 'refunds', action: 'refund', args: { n: start + i, body } })))
    }
    await il.close()

    const list = await interlock(['outbox', 'list', '--json', '--limit', '5000'], { cwd })
    expect(list.code, list.stderr).toBe(0)
    expect(list.stdout.length).toBeGreaterThan(1_500_000)
    expect(JSON.parse(list.stdout).effects).toHaveLength(5_000)

    const exported = await interlock(['outbox', 'export', '--out', '-'], { cwd })
    expect(exported.code, exported.stderr).toBe(0)
    expect(exported.stdout.length).toBeGreaterThan(5_000_000)
    const lines = exported.stdout.trimEnd().split('\n').map((l) => JSON.parse(l))
    expect(lines[0]).toMatchObject({ format: 'interlock-journal-export/v1' })
    expect(lines).toHaveLength(5_002)
    expect(lines[lines.length - 1].end.records).toBe(5_000)
    expect(exported.stderr).toContain('Exported 5000 records of 5000 effects to stdout.')

    // The file it wrote verifies offline like any export.
    writeFileSync(join(cwd, 'piped.jsonl'), exported.stdout)
    const verified = await interlock(['outbox', 'verify', '--file', 'piped.jsonl'], { cwd })
    expect(verified.code, verified.stdout + verified.stderr).toBe(0)
  })
})
