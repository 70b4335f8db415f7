/**
 * The notary's crash points (notary-crash-points.test.ts) in the other forms a
 * deployment takes, one table: the notary's log in PostgreSQL (served from the
 * embedded server) with the service's node:http middleware, and the service
 * on Fastify behind the notary's plugin with a SQLite log. In each, the
 * demo's /plain route is a tier-3 target reached through notarized(target);
 * its agent (notary-child.ts) is SIGKILLed at each crash point. Recovery asks
 * the notary and ends COMMITTED, applied exactly once, never AMBIGUOUS; the
 * first attempt's request arriving late is refused or replayed, never applied.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoreConfig, TargetConfig } from '../../src/core/config/types.js'
import { CRASH_ENV, type CrashPoint } from '../../src/core/crash-points.js'
import { toBase64Url } from '../../src/core/crypto/encoding.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { toEffect } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { notaryClient } from '../../src/core/notary/client.js'
import { notaryLog, type NotaryLog } from '../../src/core/notary/log.js'
import { notaryMiddleware } from '../../src/core/notary/middleware.js'
import { notarized } from '../../src/core/notary/notarized.js'
import { openPostgresNotaryStore } from '../../src/core/notary/postgres/pg-notary-store.js'
import { serveNotary } from '../../src/core/notary/serve.js'
import { startNotaryServer } from '../../src/core/notary/server.js'
import { openSqliteNotaryStore } from '../../src/core/notary/sqlite/sqlite-notary-store.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTarget } from '../../src/core/targets/registry.js'
import { runTsChild } from '../helpers/child.js'
import { startFastifyService } from '../helpers/fastify-service.js'
import { startHttpService } from '../helpers/http-service.js'
import { createTestDatabase } from '../helpers/pg.js'
import type { NotaryChildPlan } from './notary-child.js'

const agent = generateKeyPair('relay', 'agent-1')
const service = generateKeyPair('relay', 'svc')
const trusted = { agents: { 'agent-1': agent.publicKey }, services: { svc: service.publicKey } }
const middleware = { service: 'svc', key: service }

/** One deployment: where the notary keeps its log, what the service runs. */
interface Rig {
  notaryUrl: string
  log: NotaryLog
  svc: { url: string; counts(): { plain: Record<string, number> } }
  close(): Promise<void>
}
const FORMS: { form: string; start: (dir: string) => Promise<Rig> }[] = [
  {
    form: 'the notary on PostgreSQL, the service on node:http',
    start: async (dir) => {
      const db = await createTestDatabase()
      const notary = await serveNotary({ host: '127.0.0.1', port: 0, path: join(dir, 'unused.db'), ...trusted, postgres: { url: db.url, schema: 'interlock_notary' } })
      const log = notaryLog(await openPostgresNotaryStore({ url: db.url, install: false }), trusted)
      const svc = await startHttpService({ around: notaryMiddleware({ notary: notary.url, ...middleware }) })
      return {
        notaryUrl: notary.url,
        log,
        svc,
        close: async () => {
          await svc.close()
          await log.close()
          await notary.close()
          await db.drop()
        },
      }
    },
  },
  {
    form: 'the notary on SQLite, the service on Fastify',
    start: async (dir) => {
      const log = notaryLog(openSqliteNotaryStore(join(dir, 'notary.db')), trusted)
      const notary = await startNotaryServer(log)
      const svc = await startFastifyService({ notary: { notary: notary.url, ...middleware } })
      return {
        notaryUrl: notary.url,
        log,
        svc,
        close: async () => {
          await svc.close()
          await notary.close()
          await log.close()
        },
      }
    },
  },
]

const POINTS: CrashPoint[] = ['after-dispatched', 'after-intend', 'after-apply', 'after-committed']
const BEFORE_CLAIM = new Set<CrashPoint>(['after-dispatched', 'after-intend'])

describe.each(FORMS)('a tier-3 service behind the notary, its agent killed at each crash point: $form', ({ start }) => {
  let dir = ''
  let rig: Rig
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-notary-forms-'))
    rig = await start(dir)
  })
  afterAll(async () => {
    await rig?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const storeConfig = (): StoreConfig => ({ kind: 'sqlite', path: join(dir, 'journal.db') })
  const tier3 = (): TargetConfig => ({ type: 'http', tier: 3, method: 'POST', headers: {}, timeoutMs: 5000, connectTimeoutMs: 2000, url: `${rig.svc.url}/plain` })

  it.each(POINTS)('killed %s: COMMITTED, applied exactly once, never AMBIGUOUS; a late first attempt applies nothing', async (point) => {
    const input = { thread: `notary-${point}`, target: 'svc', action: 'charge', args: { amount: '1.00' } }
    const id = toEffect(input).id
    const plan: NotaryChildPlan = {
      store: storeConfig(),
      name: 'svc',
      target: tier3(),
      effects: [input],
      notary: { url: rig.notaryUrl, agent: 'agent-1', seed: toBase64Url(agent.seed), services: trusted.services },
    }
    const file = join(dir, `${point}.json`)
    writeFileSync(file, JSON.stringify(plan))
    const run = await runTsChild('test/crash/notary-child.ts', [file], { [CRASH_ENV]: point })
    expect(run.signal, run.stderr).toBe('SIGKILL')

    const store = await openStore(storeConfig())
    const target = notarized(createTarget('svc', tier3()), { notary: notaryClient({ url: rig.notaryUrl, writer: 'agent-1', key: agent }), services: trusted.services })
    const gate = new Gate({ store, targets: [target], retry: { maxAttempts: 3, backoffMs: 10 } })
    try {
      await gate.recover()
      expect((await store.get(id))?.state).toBe('COMMITTED')
      expect(rig.svc.counts().plain[id] ?? 0).toBe(1)
      const attempts = (await rig.log.effect(id)).attempts.map((a) => a.state)
      expect(attempts).toEqual(BEFORE_CLAIM.has(point) ? ['ABORTED', 'PERFORMED'] : ['PERFORMED'])
      expect(await rig.log.verify(id)).toEqual([])
      // Attempt 1's request arriving again: refused when it was aborted, replayed from its record when performed.
      const late = await fetch(`${rig.svc.url}/plain`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'interlock-effect': id, 'interlock-attempt': '1' },
        body: JSON.stringify({ action: 'charge', args: input.args, effect_id: id }),
      })
      expect(late.status).toBe(BEFORE_CLAIM.has(point) ? 409 : 200)
      expect(rig.svc.counts().plain[id]).toBe(1)
    } finally {
      await gate.close()
      await store.close()
    }
  })
})
