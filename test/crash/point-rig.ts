/**
 * What the crash-point tests share (crash-points*.test.ts): a scratch
 * directory, the HTTP service whose own ledger judges every run, a PostgreSQL
 * database, the service's endpoint for each tier, and the two stores; a child
 * killed at an armed point, and the invariants checked after recovery.
 * Call `pointRig(prefix)` at the top of a test file: it registers the
 * beforeAll/afterAll hooks and its fields are ready inside tests.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect } from 'vitest'
import type { StoreConfig, TargetConfig } from '../../src/core/config/types.js'
import { CRASH_ENV, type CrashPoint } from '../../src/core/crash-points.js'
import type { Tier } from '../../src/core/effect.js'
import type { Store } from '../../src/core/stores/store.js'
import { runTsChild } from '../helpers/child.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'
import { checkInvariants, verifyJournal } from './invariants.js'
import type { ChildPlan } from './submit-child.js'

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
  /**
   * Writes `plan` to `<name>.json`, runs the child (submit-child.ts journals
   * through a gate, relay-child.ts through an outbox and a relay) with `point`
   * armed, and expects it SIGKILLed there. Any fault the test set on the
   * service for the child is cleared once it is gone.
   */
  killAt(child: 'submit-child' | 'relay-child', point: CrashPoint, plan: ChildPlan, name: string): Promise<void>
  /**
   * After recovery: the invariants (invariants.ts) hold for the one effect,
   * judged by the service's own count, and the whole journal verifies.
   * `crashedInWindow`: the crash fell between DISPATCHED and COMMITTED, so a
   * tier-3 AMBIGUOUS is expected rather than a violation.
   */
  expectWhole(store: Store, effect: { id: string; tier: Tier; crashedInWindow?: boolean }): Promise<void>
}

/** What a rig needs of the service whose own ledger judges each run. */
export interface RigService {
  /** Faults armed for a child are cleared once it is gone. */
  clearFaults(): void
  close(): Promise<void>
}

/** The part of a rig that does not depend on which service it runs against. */
export interface ServiceRig<S extends RigService> {
  readonly dir: string
  readonly service: S
  readonly stores: [string, () => StoreConfig][]
  killAt(child: 'submit-child' | 'relay-child', point: CrashPoint, plan: ChildPlan, name: string): Promise<void>
  /** As PointRig.expectWhole, judged by `applications` (the service's own count); `unsure`: a fault on the wire left the sender unsure. */
  expectWhole(store: Store, effect: { id: string; tier: Tier; crashedInWindow?: boolean; unsure?: boolean }, applications: (id: string) => number): Promise<void>
}

/**
 * A scratch directory, the service `start` makes, a PostgreSQL database and
 * the two stores, for a test file: registers its beforeAll/afterAll hooks.
 * pointRig runs it against the demo's HTTP service; the declared-API crash
 * tests against an API's emulator (src/emulators).
 */
export function serviceRig<S extends RigService>(prefix: string, start: () => Promise<S>): ServiceRig<S> {
  let dir = ''
  let service: S | undefined
  let pgDb: TestDatabase | undefined
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `${prefix}-`))
    service = await start()
    pgDb = await createTestDatabase()
  })
  afterAll(async () => {
    await service?.close()
    await pgDb?.drop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })
  const svc = (): S => {
    if (!service) throw new Error('serviceRig: the service starts in beforeAll; use it inside tests')
    return service
  }
  return {
    get dir() {
      return dir
    },
    get service() {
      return svc()
    },
    stores: [
      ['sqlite', () => ({ kind: 'sqlite', path: join(dir, 'journal.db') })],
      ['postgres', () => ({ kind: 'postgres', url: pgDb!.url, schema: 'interlock' })],
    ],
    async killAt(child, point, plan, name) {
      const planFile = join(dir, `${name}.json`)
      writeFileSync(planFile, JSON.stringify(plan))
      try {
        const run = await runTsChild(`test/crash/${child}.ts`, [planFile], { [CRASH_ENV]: point })
        expect(run.signal, run.stderr).toBe('SIGKILL')
      } finally {
        svc().clearFaults()
      }
    },
    async expectWhole(store, { id, tier, crashedInWindow = false, unsure = false }, applications) {
      const violations = await checkInvariants(store, {
        effects: [{ effectId: id, tier, stale: false }],
        applications,
        crashedInWindow: new Set(crashedInWindow ? [id] : []),
        unsure: new Set(unsure ? [id] : []),
        sentEarly: new Set(),
      })
      expect(violations).toEqual([])
      expect(await verifyJournal(store)).toEqual([])
    },
  }
}

export function pointRig(prefix: string): PointRig {
  const rig = serviceRig<HttpService>(prefix, startHttpService)
  const applications = (tier: Tier, id: string): number => {
    const c = rig.service.counts()
    return (tier === 1 ? c.idempotent : c.plain)[id] ?? 0
  }
  return {
    get dir() {
      return rig.dir
    },
    get service() {
      return rig.service
    },
    targetFor(tier) {
      const url = rig.service.url
      const base = { type: 'http' as const, method: 'POST' as const, headers: {}, timeoutMs: 5000, connectTimeoutMs: 2000 }
      if (tier === 1) return { ...base, tier, url: `${url}/idempotent` }
      if (tier === 2) return { ...base, tier, url: `${url}/plain`, queryUrl: `${url}/applied/{effect_id}` }
      return { ...base, tier, url: `${url}/plain` }
    },
    applications,
    stores: rig.stores,
    killAt: (child, point, plan, name) => rig.killAt(child, point, plan, name),
    expectWhole: (store, effect) => rig.expectWhole(store, effect, (e) => applications(effect.tier, e)),
  }
}
