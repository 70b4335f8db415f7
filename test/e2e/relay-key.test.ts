/**
 * The relay's key is configuration ([relay] key, --key, INTERLOCK_RELAY_KEY):
 * when it cannot be used, `interlock relay` and `reconcile-effects` stop with
 * the config/key error (exit 3) and the relay's hint, `interlock relay keygen`,
 * never an operator's "not found" (exit 7) pointing at `operator keygen`.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'

beforeAll(assertCliBuilt)

function folder(relay = ''): string {
  const cwd = mkdtempSync(join(tmpdir(), 'interlock-relay-key-'))
  writeFileSync(join(cwd, 'interlock.toml'), `[store]\npath = "journal.db"\n${relay}`)
  return cwd
}

function expectRelayKeyError(run: { code: number | null; stdout: string; stderr: string }, file: string): void {
  expect(run.code, run.stderr).toBe(3)
  expect(run.stderr).toMatch(new RegExp(`^Error \\(E_CONFIG\\): the relay key ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(`))
  expect(run.stderr).toContain('Try this: Make the relay\'s key with `interlock relay keygen')
  expect(run.stderr).not.toContain('operator keygen')
}

describe('a relay key that cannot be used', () => {
  it('missing, given with --key or INTERLOCK_RELAY_KEY: interlock relay exits 3 with the relay hint', async () => {
    const cwd = folder()
    const byFlag = await interlock(['relay', '--key', 'missing.key'], { cwd })
    expectRelayKeyError(byFlag, 'missing.key')
    expect(byFlag.stderr).toContain('(--key or INTERLOCK_RELAY_KEY) cannot be read')
    const byEnv = await interlock(['relay'], { cwd, env: { INTERLOCK_RELAY_KEY: 'missing.key' } })
    expectRelayKeyError(byEnv, 'missing.key')
  })

  it('missing as [relay] key: interlock relay and reconcile-effects exit 3 with the relay hint, also under --json', async () => {
    const cwd = folder('[relay]\nkey = "gone.relay.key"\n')
    const file = join(cwd, 'gone.relay.key')
    expectRelayKeyError(await interlock(['relay'], { cwd }), file)
    expectRelayKeyError(await interlock(['reconcile-effects'], { cwd }), file)
    const machine = await interlock(['relay', '--json'], { cwd })
    expect(machine.code).toBe(3)
    expect(JSON.parse(machine.stdout).error).toMatchObject({ code: 'E_CONFIG', exitCode: 3, context: { path: file, from: '[relay] key' } })
  })

  it('encrypted, or an operator key: exit 3 with the relay hint', async () => {
    const cwd = folder()
    writeKeyFile(join(cwd, 'locked.key'), generateKeyPair('relay', 'relay-1'), { passphrase: 'correct horse' })
    const locked = await interlock(['relay', '--key', 'locked.key'], { cwd })
    expectRelayKeyError(locked, 'locked.key')
    expect(locked.stderr).toContain('is encrypted, and a relay has no passphrase to give')
    writeKeyFile(join(cwd, 'alice.key'), generateKeyPair('operator', 'alice'))
    const operator = await interlock(['relay', '--key', 'alice.key'], { cwd })
    expectRelayKeyError(operator, 'alice.key')
    expect(operator.stderr).toContain('holds an operator key, not a relay key')
  })
})
