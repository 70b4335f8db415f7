/**
 * Tables fit the terminal: the built binary, run on a real pseudo-terminal
 * (util-linux `script`), prints `check` and `outbox list` with realistic long
 * values in no more than the terminal's columns: 100 when the terminal does
 * not say its width, its own width when it does. `--wide` keeps every column
 * whole; off a terminal (a pipe) every column is whole as before.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stripVTControlCharacters } from 'node:util'
import { beforeAll, describe, expect, inject, it } from 'vitest'
import { Gate } from '../../src/core/gate.js'
import { openStore } from '../../src/core/stores/open.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { CountingTarget } from '../helpers/counting-target.js'

beforeAll(() => {
  assertCliBuilt()
  if (spawnSync('script', ['--version']).status !== 0) throw new Error('these tests need util-linux `script` to run the CLI on a pseudo-terminal')
})

const TARGET = 'payments-eu-west-production'
const THREAD = 'support-agent/conversation-8f14e45fceea167a-refund-request'

const CONFIG = `[store]
path = "journal.db"

[targets.${TARGET}]
type = "http"
tier = 1
url = "http://127.0.0.1:9/v1/refunds/with/a/rather/long/path/for/the/probe/to/name"
headers = { Authorization = "Bearer \${PAY_TOKEN}" }
`

const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`

/** Runs the binary on a pseudo-terminal, `cols` wide when given (else the terminal does not say). */
function onTerminal(args: string[], cwd: string, cols?: number): Promise<{ code: number | null; lines: string[] }> {
  const bin = join(inject('cliRoot'), 'bin', 'run.js')
  const command = `${cols === undefined ? '' : `stty cols ${cols}; `}exec ${quote(process.execPath)} ${[bin, ...args].map(quote).join(' ')}`
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: cwd, PAY_TOKEN: 'tok_e2e_tables', TERM: 'xterm' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, lines: stripVTControlCharacters(out).replace(/\r/g, '').split('\n') }))
  })
}

const widest = (lines: string[]) => Math.max(...lines.map((l) => [...l].length))

let cwd: string
const effectIds: string[] = []

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-tables-'))
  writeFileSync(join(cwd, 'interlock.toml'), CONFIG)
  const store = await openStore({ kind: 'sqlite', path: join(cwd, 'journal.db') })
  const gate = new Gate({ store, targets: [new CountingTarget(TARGET, 1)] })
  for (const [i, action] of ['refund_partial_amount_to_original_card', 'refund_full_amount_and_close_ticket'].entries()) {
    const o = await gate.submit({ thread: `${THREAD}-${i}`, target: TARGET, action, args: { amount: '12.00', note: 'customer asked twice' } })
    effectIds.push(o.effectId)
  }
  await gate.close()
  await store.close()
}, 60_000)

describe('on a terminal, tables fit its width', () => {
  it.each([
    ['check', ['check']],
    ['outbox list', ['outbox', 'list']],
  ])('%s: no line wider than 100 columns when the terminal does not say, nor than 80 on an 80-column one', async (_name, args) => {
    const unknown = await onTerminal(args, cwd)
    expect(unknown.lines.join('\n')).toContain('┌')
    expect(widest(unknown.lines)).toBeLessThanOrEqual(100)
    const narrow = await onTerminal(args, cwd, 80)
    expect(widest(narrow.lines)).toBeLessThanOrEqual(80)
    // The same verdict whatever the width: check fails here (the target is not reachable).
    expect(narrow.code).toBe(unknown.code)
  })

  it('outbox list keeps a prefix of each effect id that `outbox show` takes, and --wide keeps every column whole', async () => {
    const fitted = await onTerminal(['outbox', 'list'], cwd)
    for (const id of effectIds) expect(fitted.lines.join('\n')).toContain(id.slice(0, 12))
    const wide = await onTerminal(['outbox', 'list', '--wide'], cwd)
    expect(widest(wide.lines)).toBeGreaterThan(100)
    for (const id of effectIds) expect(wide.lines.join('\n')).toContain(id)
    expect(wide.lines.join('\n')).toContain(`${THREAD}-0`)
  })

  it('check --wide prints every column whole', async () => {
    const wide = await onTerminal(['check', '--wide'], cwd)
    expect(widest(wide.lines)).toBeGreaterThan(100)
    expect(wide.lines.some((l) => l.includes(`targets.${TARGET}.reachable`))).toBe(true)
  })
})

describe('off a terminal', () => {
  it('every column is whole, one line per row, as before', async () => {
    const run = await interlock(['outbox', 'list'], { cwd })
    expect(run.code, run.stderr).toBe(0)
    const rows = run.stdout.trim().split('\n')
    expect(rows).toHaveLength(4)
    for (const id of effectIds) expect(run.stdout).toMatch(new RegExp(`^${id}\\s+COMMITTED\\s+${TARGET}\\s`, 'm'))
  })
})
