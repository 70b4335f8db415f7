/**
 * The keys and store families of `interlock check`, and the runner, at unit
 * level: real key files with real modes, real SQLite journals.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { checkRelayKey, runChecks } from '../../src/core/check/index.js'
import { keysCheck } from '../../src/core/check/keys-check.js'
import { withTimeout, ProbeTimeout } from '../../src/core/check/timeout.js'
import type { CheckContext } from '../../src/core/check/types.js'
import { defaultConfig } from '../../src/core/config/defaults.js'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { install } from '../../src/core/stores/migrate.js'
import { latestVersion, loadMigrations } from '../../src/core/stores/migrations.js'
import { openStore } from '../../src/core/stores/open.js'

const dir = () => mkdtempSync(join(tmpdir(), 'interlock-check-unit-'))

describe('keys.relay', () => {
  const relayKey = (mode: number) => {
    const path = join(dir(), 'relay.key')
    writeKeyFile(path, generateKeyPair('relay', 'relay-1'))
    chmodSync(path, mode)
    return path
  }

  it('passes a relay key file of mode 0600', () => {
    expect(checkRelayKey(relayKey(0o600))).toMatchObject({ id: 'keys.relay', status: 'pass', detail: expect.stringContaining('relay key relay-1') })
  })

  it('fails a relay key readable by group or others, with chmod 600 as the fix', () => {
    for (const mode of [0o644, 0o640, 0o604]) {
      const row = checkRelayKey(relayKey(mode))
      expect(row).toMatchObject({ id: 'keys.relay', status: 'fail' })
      expect(row.detail).toContain(`mode ${mode.toString(8)}`)
      expect(row.fix).toContain('chmod 600')
    }
  })

  it('fails a missing file, an operator key and a file that is not a key', () => {
    const d = dir()
    expect(checkRelayKey(join(d, 'absent.key'))).toMatchObject({ status: 'fail', detail: expect.stringContaining('ENOENT') })
    const op = join(d, 'alice.key')
    writeKeyFile(op, generateKeyPair('operator', 'alice'))
    expect(checkRelayKey(op)).toMatchObject({ status: 'fail', detail: expect.stringContaining('not a relay key') })
    const junk = join(d, 'junk.key')
    writeFileSync(junk, 'hello', { mode: 0o600 })
    expect(checkRelayKey(junk)).toMatchObject({ status: 'fail', detail: expect.stringContaining('not JSON') })
  })

  it('is read from [relay] key, relative to the config file', async () => {
    const d = dir()
    writeKeyFile(join(d, 'relay.key'), generateKeyPair('relay', 'r'))
    chmodSync(join(d, 'relay.key'), 0o644)
    const ctx: CheckContext = {
      config: { ...defaultConfig(d), file: join(d, 'interlock.toml') },
      raw: { relay: { key: './relay.key' } },
      unset: new Map(),
      operatorProblems: [],
      policyProblems: [],
      timeoutMs: 1000,
    }
    const rows = await keysCheck.run(ctx)
    expect(rows.map((r) => [r.id, r.status])).toEqual([['keys.operators', 'pass'], ['keys.relay', 'fail']])
    expect((await keysCheck.run({ ...ctx, raw: {} })).map((r) => r.id)).toEqual(['keys.operators'])
    // As the relay does: $INTERLOCK_RELAY_KEY when the file names no key.
    expect((await keysCheck.run({ ...ctx, raw: {}, relayKeyEnv: join(d, 'relay.key') })).at(-1)).toMatchObject({ id: 'keys.relay', status: 'fail' })
    // A shared outbox is drained by relays: no key anywhere is worth a warning there.
    const shared = { ...ctx, raw: {}, config: { ...ctx.config, store: { kind: 'postgres' as const, url: 'postgres://db/app', schema: 'interlock' } } }
    expect((await keysCheck.run(shared)).at(-1)).toMatchObject({ id: 'keys.relay', status: 'warn' })
  })
})

describe('store family on SQLite', () => {
  const configIn = (d: string) => writeFileSync(join(d, 'interlock.toml'), '[store]\npath = "journal.db"\n')

  it('passes an installed journal, opened read-only', async () => {
    const d = dir()
    configIn(d)
    await install({ kind: 'sqlite', path: join(d, 'journal.db') })
    const report = await runChecks({ cwd: d, env: {}, only: ['store'] })
    expect(report.checks.map((c) => [c.id, c.status])).toEqual([['config.file', 'pass'], ['config.schema', 'pass'], ['store.reachable', 'pass'], ['store.schema', 'pass']])
    expect(report.ok).toBe(true)
  })

  it('warns, and creates nothing, when the journal does not exist yet', async () => {
    const d = dir()
    configIn(d)
    const report = await runChecks({ cwd: d, env: {}, only: ['store'] })
    expect(report.checks.find((c) => c.id === 'store.schema')?.status).toBe('warn')
    expect(report.ok).toBe(true)
    const { existsSync } = await import('node:fs')
    expect(existsSync(join(d, 'journal.db'))).toBe(false)
  })

  it('says what is true of a missing journal: the first command that opens it creates it, nothing to install', async () => {
    const d = dir()
    configIn(d)
    const row = (await runChecks({ cwd: d, env: {}, only: ['store'] })).checks.find((c) => c.id === 'store.schema')!
    expect(row.detail).toBe(`SQLite journal ${join(d, 'journal.db')} does not exist yet; the first command that opens it creates it at version ${latestVersion('sqlite')}`)
    expect(row.fix).toMatch(/^Nothing to do for a new journal: the first command that opens it creates it \(`interlock install` creates it now\)/)
    // As a command opens it (openInterlock, outbox status...): created at this version, and then the row passes.
    await (await openStore({ kind: 'sqlite', path: join(d, 'journal.db') })).close()
    expect((await runChecks({ cwd: d, env: {}, only: ['store'] })).checks.find((c) => c.id === 'store.schema')?.status).toBe('pass')
  })

  it('says what is true of an older journal: the first command of this interlock that opens it upgrades it', async () => {
    const d = dir()
    configIn(d)
    await install({ kind: 'sqlite', path: join(d, 'journal.db') }, { migrations: loadMigrations('sqlite').slice(0, 1) })
    const row = (await runChecks({ cwd: d, env: {}, only: ['store'] })).checks.find((c) => c.id === 'store.schema')!
    expect(row).toMatchObject({ status: 'warn', detail: expect.stringMatching(/is at schema version 1; this interlock needs \d+ \(pending: .*\); the first command of this interlock that opens it upgrades it$/) })
    expect(row.fix).toMatch(/^Nothing to do: the first command of this interlock that opens it upgrades it \(`interlock install` upgrades it now/)
    await (await openStore({ kind: 'sqlite', path: join(d, 'journal.db') })).close()
    expect((await runChecks({ cwd: d, env: {}, only: ['store'] })).checks.find((c) => c.id === 'store.schema')?.status).toBe('pass')
  })

  it('fails a journal in a folder that does not exist', async () => {
    const d = dir()
    writeFileSync(join(d, 'interlock.toml'), '[store]\npath = "missing/journal.db"\n')
    const report = await runChecks({ cwd: d, env: {}, only: ['store'] })
    expect(report.checks.find((c) => c.id === 'store.reachable')?.status).toBe('fail')
    expect(report.ok).toBe(false)
  })
})

describe('the runner', () => {
  it('turns a module that throws into a failing row of its family', async () => {
    const d = dir()
    writeFileSync(join(d, 'interlock.toml'), '')
    const report = await runChecks({ cwd: d, env: {}, modules: [{ family: 'policy', run: async () => { throw new Error('boom') } }] })
    expect(report.checks.at(-1)).toMatchObject({ id: 'policy.error', status: 'fail', detail: 'boom' })
    expect(report.summary).toEqual({ pass: 2, warn: 0, fail: 1 })
  })

  it('gives each probe its own deadline and tells it through its signal', async () => {
    let aborted = false
    const never = (signal: AbortSignal) => new Promise<never>(() => signal.addEventListener('abort', () => (aborted = true)))
    await expect(withTimeout(50, never)).rejects.toBeInstanceOf(ProbeTimeout)
    expect(aborted).toBe(true)
    await expect(withTimeout(1000, async () => 'fast')).resolves.toBe('fast')
  })
})
