/**
 * interlock.toml files no person writes but generators and typos do: deep
 * nesting, huge arrays, thousands of problems, misspelt keys, and a fuzz of
 * generated bad files. Each must end in a config error (exit 3) whose
 * problems name a key path, quickly, never in an unexpected error (exit 1).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { describeFailure, formatFailure, SHOWN_PROBLEMS } from '../../src/cli/error-output.js'
import { parseConfig } from '../../src/core/config/load.js'
import { ConfigError, ExitCode } from '../../src/core/errors.js'

const FILE = '/srv/agent/interlock.toml'
const STORE = '[store]\npath = "journal.db"\n'

function failureOf(text: string, env: Record<string, string> = {}) {
  try {
    parseConfig(text, { file: FILE, env })
  } catch (error) {
    return { error, failure: describeFailure(error) }
  }
  throw new Error('expected the config to be refused')
}

function problemsOf(text: string): string[] {
  const { error, failure } = failureOf(text)
  expect(error).toBeInstanceOf(ConfigError)
  expect(failure.exitCode).toBe(ExitCode.CONFIG)
  return [...(error as ConfigError).problems]
}

function timed<T>(work: () => T): { value: T; ms: number } {
  const start = performance.now()
  const value = work()
  return { value, ms: performance.now() - start }
}

describe('shapes no interlock.toml has', () => {
  it('tables nested thousands deep are one config problem naming where, not a stack overflow', () => {
    const header = Array.from({ length: 20_000 }, (_, i) => `a${i}`).join('.')
    const problems = problemsOf(`${STORE}[${header}]\nx = 1\n`)
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatch(/^a0\.a1\.a2\..*a15: nested more than 16 levels deep/)
  })

  it('a 100,000-item array is one problem naming it, found well under a second', () => {
    const when = Array.from({ length: 100_000 }, (_, i) => `{ arg = "a${i}", above = "1" }`).join(', ')
    const text = `${STORE}[targets.t]\ntype = "http"\ntier = 1\nurl = "http://x"\n[[policy.rules]]\nname = "r"\ntarget = "t"\nwhen = [${when}]\n`
    // The TOML parser's own share is the same before and after; what follows it must not add seconds.
    const { value: problems, ms } = timed(() => problemsOf(text))
    expect(problems).toEqual(['policy.rules.0.when: 100000 items; no array of interlock.toml may hold more than 1000'])
    expect(ms).toBeLessThan(1_500)
  })
})

describe('many problems', () => {
  const badKeys = (n: number) => STORE + Array.from({ length: n }, (_, i) => `bogus_${i} = ${i}\n`).join('')

  it('validation is linear in the number of problems: 10,000 and 40,000 unknown keys, each named', () => {
    const ten = timed(() => problemsOf(badKeys(10_000)))
    const forty = timed(() => problemsOf(badKeys(40_000)))
    expect(ten.value).toHaveLength(10_000)
    expect(forty.value).toHaveLength(40_000)
    expect(forty.value[39_999]).toBe('store.bogus_39999: unknown key')
    // Quadratic, 40,000 took over a minute here; linear, a few seconds even on a busy machine.
    expect(forty.ms).toBeLessThan(15_000)
  })

  it('a person is shown the first fifty problems and the count of the rest, then the hint', () => {
    const { failure } = failureOf(badKeys(3_000))
    const text = formatFailure(failure, false)
    const lines = text.split('\n')
    expect(lines.filter((l) => l.startsWith('  - '))).toHaveLength(SHOWN_PROBLEMS)
    expect(text).toContain(`… and ${3_000 - SHOWN_PROBLEMS} more (3000 in all; --json lists every one)`)
    expect(lines[lines.length - 1]).toMatch(/^Try this: /)
    expect(text.length).toBeLessThan(5_000)
  })
})

describe('misspelt keys', () => {
  it('a misspelt type inside a target is named by its own key path', () => {
    const problems = problemsOf(`${STORE}[targets.pay]\ntypx = "http"\ntier = 1\nurl = "https://api.example.com/x"\n`)
    expect(problems).toContain('targets.pay.typx: unknown key (did you mean "type"?)')
  })
})

describe('generated bad config files (fuzz)', () => {
  // Building blocks of real files, and the ways generators and typos break them.
  const key = fc.constantFrom('store', 'gate', 'targets', 'policy', 'operators', 'relay', 'reconcile', 'path', 'type', 'typx', 'tier', 'url', 'rules', 'when', 'quorum', 'bogus', 'a b', '"q"')
  const scalar = fc.oneof(fc.integer(), fc.double({ noNaN: false }), fc.boolean(), fc.string({ maxLength: 12 }), fc.constant('${UNSET_VAR}'), fc.constant('${'), fc.date({ noInvalidDate: true }))
  const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(key, tie('value'), { maxKeys: 4 })),
  })).value
  const deep = fc.integer({ min: 17, max: 3_000 }).map((n) => `[${Array.from({ length: n }, (_, i) => `t${i}`).join('.')}]\nx = 1\n`)
  const longArray = fc.integer({ min: 1_001, max: 20_000 }).map((n) => `[gate]\nmax_attempts = [${Array.from({ length: n }, () => '1').join(',')}]\n`)
  const target = fc.record({ name: fc.constantFrom('pay', 'chat', 'x'), body: fc.dictionary(key, scalar, { maxKeys: 5 }) })

  const toml = (v: unknown): string => {
    if (v instanceof Date) return v.toISOString()
    if (typeof v === 'string') return JSON.stringify(v)
    if (typeof v === 'number') return Number.isFinite(v) ? String(v) : Number.isNaN(v) ? 'nan' : v > 0 ? 'inf' : '-inf'
    if (typeof v === 'boolean') return String(v)
    if (Array.isArray(v)) return `[${v.map(toml).join(', ')}]`
    return `{ ${Object.entries(v as Record<string, unknown>).map(([k, x]) => `${JSON.stringify(k)} = ${toml(x)}`).join(', ')} }`
  }
  const file = fc.oneof(
    fc.dictionary(key, value, { minKeys: 1, maxKeys: 6 }).map((d) => Object.entries(d).map(([k, v]) => `${JSON.stringify(k)} = ${toml(v)}\n`).join('')),
    target.map((t) => `${STORE}[targets.${t.name}]\n${Object.entries(t.body).map(([k, v]) => `${JSON.stringify(k)} = ${toml(v)}\n`).join('')}`),
    deep.map((d) => STORE + d),
    longArray.map((a) => STORE + a),
    fc.tuple(fc.integer({ min: 1, max: 400 })).map(([n]) => STORE + Array.from({ length: n }, (_, i) => `[targets.t${i}]\ntypx = "http"\n`).join('')),
  )

  it('hundreds of generated bad interlock.toml files each end in exit 3 with every problem naming a key path', () => {
    let refused = 0
    fc.assert(
      fc.property(file, (text) => {
        let failure
        try {
          parseConfig(text, { file: FILE, env: {} })
          return // a generated file may happen to be valid
        } catch (error) {
          failure = describeFailure(error)
        }
        refused++
        expect(failure.code, `${failure.message}\n${failure.stack}`).toBe('E_CONFIG')
        expect(failure.exitCode).toBe(ExitCode.CONFIG)
        const problems = failure.problems ?? []
        if (problems.length === 0) {
          // A TOML syntax error names the file, line and column instead.
          expect(failure.message).toMatch(/interlock\.toml(:\d+:\d+)?/)
          return
        }
        for (const p of problems) expect(p).toMatch(/^(line \d+, column \d+|[A-Za-z0-9_"-][^:\n]*): \S/)
      }),
      { numRuns: 400, seed: 20_261_130 },
    )
    expect(refused).toBeGreaterThan(300)
  })
})
