/**
 * The notary's crash points (notary-crash-points.test.ts) with the service
 * on Fastify: the demo's /plain route behind the notary's Fastify plugin, a
 * tier-3 target reached through notarized(target); its agent
 * (notary-child.ts) SIGKILLed at each crash point. Recovery asks the notary
 * and ends COMMITTED, applied exactly once, never AMBIGUOUS.
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
import { notarized } from '../../src/core/notary/notarized.js'
import { startNotaryServer, type NotaryServer } from '../../src/core/notary/server.js'
import { openSqliteNotaryStore } from '../../src/core/notary/sqlite/sqlite-notary-store.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTarget } from '../../src/core/targets/registry.js'
import { runTsChild } from '../helpers/child.js'
import { startFastifyService, type FastifyService } from '../helpers/fastify-service.js'
import type { NotaryChildPlan } from './notary-child.js'

const agent = generateKeyPair('relay', 'agent-1')
const service = generateKeyPair('relay', 'svc')
const trusted = { agents: { 'agent-1': agent.publicKey }, services: { svc: service.publicKey } }

let dir = ''
let log: NotaryLog
let notary: NotaryServer
let svc: FastifyService

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-notary-crash-fastify-'))
  log = notaryLog(openSqliteNotaryStore(join(dir, 'notary.db')), trusted)
  notary = await startNotaryServer(log)
  svc = await startFastifyService({ notary: { notary: notary.url, service: 'svc', key: service } })
})
afterAll(async () => {
  await svc?.close()
  await notary?.close()
  await log?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const storeConfig = (): StoreConfig => ({ kind: 'sqlite', path: join(dir, 'journal.db') })
const tier3 = (): TargetConfig => ({ type: 'http', tier: 3, method: 'POST', headers: {}, timeoutMs: 5000, connectTimeoutMs: 2000, url: `${svc.url}/plain` })

describe('a tier-3 Fastify service behind the notary, its agent killed at each crash point', () => {
  it.each(['after-dispatched', 'after-intend', 'after-apply', 'after-committed'] as CrashPoint[])('killed %s: COMMITTED, applied exactly once, never AMBIGUOUS', async (point) => {
    const input = { thread: `notary-fastify-${point}`, target: 'svc', action: 'charge', args: { amount: '1.00' } }
    const id = toEffect(input).id
    const plan: NotaryChildPlan = {
      store: storeConfig(),
      name: 'svc',
      target: tier3(),
      effects: [input],
      notary: { url: notary.url, agent: 'agent-1', seed: toBase64Url(agent.seed), services: trusted.services },
    }
    const file = join(dir, `${point}.json`)
    writeFileSync(file, JSON.stringify(plan))
    const run = await runTsChild('test/crash/notary-child.ts', [file], { [CRASH_ENV]: point })
    expect(run.signal, run.stderr).toBe('SIGKILL')

    const store = await openStore(storeConfig())
    const target = notarized(createTarget('svc', tier3()), { notary: notaryClient({ url: notary.url, writer: 'agent-1', key: agent }), services: trusted.services })
    const gate = new Gate({ store, targets: [target], retry: { maxAttempts: 3, backoffMs: 10 } })
    try {
      await gate.recover()
      expect((await store.get(id))?.state).toBe('COMMITTED')
      expect(svc.counts().plain[id] ?? 0).toBe(1)
      const attempts = (await log.effect(id)).attempts.map((a) => a.state)
      expect(attempts).toEqual(point === 'after-dispatched' || point === 'after-intend' ? ['ABORTED', 'PERFORMED'] : ['PERFORMED'])
      expect(await log.verify(id)).toEqual([])
      // Attempt 1's request arriving again: replayed or refused by the plugin, never applied a second time.
      const late = await fetch(`${svc.url}/plain`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'interlock-effect': id, 'interlock-attempt': '1' },
        body: JSON.stringify({ action: 'charge', args: input.args, effect_id: id }),
      })
      expect(late.status).toBe(point === 'after-dispatched' || point === 'after-intend' ? 409 : 200)
      expect(svc.counts().plain[id]).toBe(1)
    } finally {
      await gate.close()
      await store.close()
    }
  })
})
