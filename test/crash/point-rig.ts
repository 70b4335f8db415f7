/**
 * What the crash-point tests share (crash-points*.test.ts): a scratch
 * directory, the HTTP service whose own ledger judges every run, a PostgreSQL
 * database, the service's endpoint for each tier, and the two stores.
 * Call `pointRig(prefix)` at the top of a test file: it registers the
 * beforeAll/afterAll hooks and its fields are ready inside tests.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import type { StoreConfig, TargetConfig } from '../../src/core/config/types.js'
import type { Tier } from '../../src/core/effect.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'

export const TIERS: Tier[] = [1, 2, 3]

export interface PointRig {
  readonly dir: string
  readonly service: HttpService
  /** The service's endpoint for a tier: /idempotent (1), /plain with /applied to ask (2), /plain (3). */
  targetFor(tier: Tier): TargetConfig
  /** How many times the service applied the effect: its own count, never the journal. */
  applications(tier: Tier, id: string): number
  /** [name, config] of each store, for describe.each. */
  readonly stores: [string, () => StoreConfig][]
}

export function pointRig(prefix: string): PointRig {
  let dir = ''
  let service: HttpService | undefined
  let pgDb: TestDatabase | undefined
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `${prefix}-`))
    service = await startHttpService()
    pgDb = await createTestDatabase()
  })
  afterAll(async () => {
    await service?.close()
    await pgDb?.drop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })
  const svc = (): HttpService => {
    if (!service) throw new Error('pointRig: the service starts in beforeAll; use it inside tests')
    return service
  }
  return {
    get dir() {
      return dir
    },
    get service() {
      return svc()
    },
    targetFor(tier) {
      const url = svc().url
      const base = { type: 'http' as const, method: 'POST' as const, headers: {}, timeoutMs: 5000, connectTimeoutMs: 2000 }
      if (tier === 1) return { ...base, tier, url: `${url}/idempotent` }
      if (tier === 2) return { ...base, tier, url: `${url}/plain`, queryUrl: `${url}/applied/{effect_id}` }
      return { ...base, tier, url: `${url}/plain` }
    },
    applications(tier, id) {
      const c = svc().counts()
      return (tier === 1 ? c.idempotent : c.plain)[id] ?? 0
    },
    stores: [
      ['sqlite', () => ({ kind: 'sqlite', path: join(dir, 'journal.db') })],
      ['postgres', () => ({ kind: 'postgres', url: pgDb!.url, schema: 'interlock' })],
    ],
  }
}
