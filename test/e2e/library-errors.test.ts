/**
 * The library's front door fails as the CLI does: openInterlock() rejects
 * with an InterlockError whose code, exit code, message and hint are what a
 * command needing the same config prints in the same folder, and Node shows
 * it (console.error, util.inspect) as the CLI's `Error (<code>)` and
 * `Try this:` lines, not a stack into our internals.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inspect } from 'node:util'
import { beforeAll, describe, expect, it } from 'vitest'
import { InterlockError } from '../../src/core/errors.js'
import { openInterlock } from '../../src/core/index.js'
import { assertCliBuilt, interlock, type Run } from '../helpers/cli.js'

beforeAll(assertCliBuilt)

function folder(config?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-library-errors-'))
  if (config !== undefined) writeFileSync(join(dir, 'interlock.toml'), config)
  return dir
}

async function libraryError(cwd: string): Promise<InterlockError> {
  const error = await openInterlock({ cwd, env: {} }).then(
    async (opened) => {
      await opened.close()
      throw new Error('openInterlock opened')
    },
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(InterlockError)
  return error as InterlockError
}

/** The error as the CLI printed it, human and --json, and the library's the same. */
async function expectSameAsCli(error: InterlockError, human: Run, machine: Run): Promise<void> {
  expect(human.stdout).toBe('')
  expect(human.code).toBe(error.exitCode)
  // Problems, when any, between the message and the hint: inspect prints them too.
  expect(inspect(error)).toBe(human.stderr.replace(/\n$/, ''))
  expect(human.stderr.split('\n')[0]).toBe(`Error (${error.code}): ${error.message}`)
  expect(human.stderr).toContain(`\nTry this: ${error.hint}\n`)
  expect(machine.code).toBe(error.exitCode)
  expect(JSON.parse(machine.stdout).error).toMatchObject({ code: error.code, exitCode: error.exitCode, message: error.message, hint: error.hint })
}

describe('openInterlock() fails as the CLI does', () => {
  it('with no interlock.toml: the message and hint `interlock outbox submit` prints there', async () => {
    const cwd = folder()
    const error = await libraryError(cwd)
    expect(error).toMatchObject({ code: 'E_CONFIG', exitCode: 3, message: `no interlock.toml in ${cwd}` })
    const args = ['outbox', 'submit', '--target', 'refunds', '--action', 'refund']
    await expectSameAsCli(error, await interlock(args, { cwd }), await interlock([...args, '--json'], { cwd }))
  })

  it('with a target whose ${VAR} is not set: what `outbox submit` on it and `relay` print, naming what to export', async () => {
    const cwd = folder('[targets.refunds]\ntype = "http"\ntier = 1\nurl = "https://pay.example/refunds"\nheaders = { Authorization = "Bearer ${PAY_TOKEN}" }\n')
    const error = await libraryError(cwd)
    expect(error).toMatchObject({ code: 'E_CONFIG', exitCode: 3, message: 'target refunds needs environment variables that are not set' })
    expect(error.hint).toMatch(/^Export PAY_TOKEN where this runs\./)
    const submit = ['outbox', 'submit', '--target', 'refunds', '--action', 'refund']
    await expectSameAsCli(error, await interlock(submit, { cwd }), await interlock([...submit, '--json'], { cwd }))
    await expectSameAsCli(error, await interlock(['relay'], { cwd }), await interlock(['relay', '--json'], { cwd }))
  })

  it('shows its stack only with INTERLOCK_DEBUG=1, as the CLI does', async () => {
    const error = await libraryError(folder())
    expect(inspect(error)).not.toContain('    at ')
    process.env.INTERLOCK_DEBUG = '1'
    try {
      expect(inspect(error)).toContain('    at loadConfig')
    } finally {
      delete process.env.INTERLOCK_DEBUG
    }
  })
})
