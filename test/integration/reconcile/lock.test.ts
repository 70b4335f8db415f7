/**
 * The reconcile lock on both stores: one holder at a time, given back on
 * release, and gone when its holder is SIGKILLed (a crashed cron run must not
 * block every later one).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoreConfig } from '../../../src/core/config/types.js'
import { tryReconcileLock } from '../../../src/core/reconcile/lock.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

let dir: string
let pgDb: TestDatabase
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-lock-'))
  pgDb = await createTestDatabase()
})
afterAll(async () => {
  await pgDb?.drop()
  rmSync(dir, { recursive: true, force: true })
})

const stores: [string, () => StoreConfig][] = [
  ['sqlite', () => ({ kind: 'sqlite', path: join(dir, 'journal.db') })],
  ['postgres', () => ({ kind: 'postgres', url: pgDb.url, schema: 'interlock' })],
]

describe.each(stores)('reconcile lock on %s', (_name, config) => {
  it('one holder at a time; released, it can be taken again', async () => {
    const first = await tryReconcileLock(config())
    expect(first).not.toBeNull()
    expect(await tryReconcileLock(config())).toBeNull()
    await first!.release()
    const again = await tryReconcileLock(config())
    expect(again).not.toBeNull()
    await again!.release()
  })

  it('dies with its holder: a SIGKILLed run leaves no lock behind', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/crash/lock-child.ts', JSON.stringify(config())], { stdio: ['ignore', 'pipe', 'inherit'] })
    const said = await new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())))
    expect(said).toBe('locked')
    expect(await tryReconcileLock(config())).toBeNull()
    child.kill('SIGKILL')
    await new Promise((r) => child.once('exit', r))
    let lock = null
    // PostgreSQL notices the dead session a moment later.
    for (let i = 0; i < 50 && !lock; i++) {
      lock = await tryReconcileLock(config())
      if (!lock) await new Promise((r) => setTimeout(r, 100))
    }
    expect(lock).not.toBeNull()
    await lock!.release()
  })
})
