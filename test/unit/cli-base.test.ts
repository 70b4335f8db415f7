import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Errors } from '@oclif/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { BaseCommand } from '../../src/cli/base-command.js'
import { describeFailure, failureEnvelope, formatFailure } from '../../src/cli/error-output.js'
import { renderTable } from '../../src/cli/table.js'
import { ConfigError, ExitCode, StoreError } from '../../src/core/errors.js'

// A package with no commands of its own: these tests must not load whatever is in the shared dist/.
const root = mkdtempSync(join(tmpdir(), 'interlock-cli-unit-'))
writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'interlock', version: '0.0.0', oclif: { bin: 'interlock' } }))

describe('describeFailure / formatFailure', () => {
  it('an Interlock error keeps its code, exit code, problems and hint', () => {
    const failure = describeFailure(
      new ConfigError('interlock.toml is invalid: 1 problem', ['store.pathh: unknown key'], { hint: 'Fix it.' }),
    )
    expect(failure).toMatchObject({ code: 'E_CONFIG', exitCode: ExitCode.CONFIG, problems: ['store.pathh: unknown key'] })
    expect(formatFailure(failure, false)).toBe(
      'Error (E_CONFIG): interlock.toml is invalid: 1 problem\n  - store.pathh: unknown key\nTry this: Fix it.',
    )
  })

  it('an unexpected error exits 1 and shows its stack (with causes) only in debug mode', () => {
    const failure = describeFailure(new TypeError('boom', { cause: new Error('root cause') }))
    expect(failure).toMatchObject({ code: 'E_UNEXPECTED', exitCode: ExitCode.FAILURE, message: 'boom' })
    expect(formatFailure(failure, false)).not.toContain('    at ')
    const debug = formatFailure(failure, true)
    expect(debug).toContain('    at ')
    expect(debug).toContain('Caused by: Error: root cause')
  })

  it('the JSON envelope has code, message, hint, problems only when there are some, and context', () => {
    const envelope = failureEnvelope(describeFailure(new StoreError('store down', { context: { n: 10n } })))
    expect(envelope).toEqual({
      error: { code: 'E_STORE', exitCode: ExitCode.STORE, message: 'store down', hint: null, context: { n: '10' } },
    })
  })
})

class Boom extends BaseCommand<typeof Boom> {
  static override id = 'boom'
  async run(): Promise<void> {
    this.addSecret('hunter22')
    throw new StoreError('cannot reach postgres://app:hunter22@db/x', { hint: 'Check the store.' })
  }
}

class Quits extends BaseCommand<typeof Quits> {
  static override id = 'quits'
  async run(): Promise<void> {
    this.exit(4)
  }
}

describe('BaseCommand.catch', () => {
  afterEach(() => {
    vi.restoreAllMocks()
    process.exitCode = undefined
  })

  async function run(argv: string[]): Promise<{ error: Error & { exitCode?: number; oclif?: { exit?: number } }; out: string; err: string }> {
    let out = ''
    let err = ''
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((out += String(chunk)), true))
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((err += String(chunk)), true))
    // oclif's ux writes JSON through console.log, which vitest intercepts.
    vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void (out += `${a.join(' ')}\n`))
    const error = await Boom.run(argv, root).then(
      () => undefined,
      (e: unknown) => e,
    )
    vi.restoreAllMocks()
    if (!(error instanceof Error)) throw new Error('expected the command to fail')
    return { error, out, err }
  }

  it('prints the error once, redacted, and sets both exit code fields', async () => {
    const { error, out, err } = await run([])
    expect(out).toBe('')
    expect(err).toBe('Error (E_STORE): cannot reach postgres://app:***@db/x\nTry this: Check the store.\n')
    expect(error.exitCode).toBe(ExitCode.STORE)
    expect(error.oclif?.exit).toBe(ExitCode.STORE)
    expect((error as { skipOclifErrorHandling?: boolean }).skipOclifErrorHandling).toBe(true)
  })

  it('under --json prints the envelope on stdout, redacted', async () => {
    const { error, out, err } = await run(['--json'])
    expect(err).toBe('')
    expect(JSON.parse(out)).toMatchObject({ error: { code: 'E_STORE', message: 'cannot reach postgres://app:***@db/x' } })
    expect(error.exitCode).toBe(ExitCode.STORE)
    expect(error.oclif?.exit).toBe(ExitCode.STORE)
  })

  it('this.exit(n) passes through untouched and prints nothing', async () => {
    let printed = ''
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((printed += String(chunk)), true))
    const error = await Quits.run([], root).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Errors.ExitError)
    expect((error as Errors.ExitError).oclif.exit).toBe(4)
    expect(printed).toBe('')
  })
})

describe('renderTable', () => {
  it('off a terminal: plain aligned columns, no escape codes, no trailing spaces', () => {
    const text = renderTable(['target', 'tier'], [['payments', 1], ['docs', null]], { tty: false, color: false })
    expect(text).toBe('target    tier\npayments  1\ndocs')
  })

  it('on a terminal: boxed, bold headings only when colour is allowed', () => {
    expect(renderTable(['a'], [['x']], { tty: true, color: true })).toContain('\u001b[1m')
    const plain = renderTable(['a'], [['x']], { tty: true, color: false })
    expect(plain).toContain('┌')
    expect(plain).not.toContain('\u001b[')
  })
})
