/**
 * What a batch of randomized schedules runs against: one store (SQLite file
 * or PostgreSQL schema), a second handle on it for the "other process", and
 * the ledger service. Shared by the vitest file and `npm run crash|soak`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { StoreConfig } from '../../src/core/config/types.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { LedgerService } from './ledger-service.js'

export interface Rig {
  config: StoreConfig
  store: Store
  /** Another handle on the same store: a second process's. */
  second: Store
  service: LedgerService
  close(): Promise<void>
}

/**
 * SQLite: a file on tmpfs when there is one. These runs test the gate's
 * logic across crashes, not the disk: fsync on every record would only make
 * them slow, and durability is what the SIGKILL and store-fault tests check.
 */
export async function sqliteRig(): Promise<Rig> {
  const base = process.env.INTERLOCK_CRASH_DIR ?? (process.platform === 'linux' ? '/dev/shm' : tmpdir())
  const dir = mkdtempSync(join(base, 'interlock-crash-'))
  const config: StoreConfig = { kind: 'sqlite', path: join(dir, 'journal.db') }
  const rig = await rigOn(config)
  return { ...rig, close: async () => {
    await rig.close()
    rmSync(dir, { recursive: true, force: true })
  } }
}

export async function postgresRig(url: string): Promise<Rig> {
  const config: StoreConfig = { kind: 'postgres', url, schema: 'interlock' }
  await install(config)
  return rigOn(config)
}

async function rigOn(config: StoreConfig): Promise<Rig> {
  const store = await openStore(config)
  const second = await openStore(config)
  const service = await new LedgerService().start()
  return {
    config,
    store,
    second,
    service,
    close: async () => {
      await service.close()
      await second.close()
      await store.close()
    },
  }
}
