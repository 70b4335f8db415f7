/**
 * An effect sent through the notary whose target's config later loses
 * `notary = "<url>"` (docs/notary.md, "A notary the config no longer
 * names"). A child process submits through the notarized target on a real
 * SQLite journal and is SIGKILLed after its intend (nothing reached the
 * service) or after the service performed (the journal never heard); the
 * effect is then recovered with interlock.toml edited to drop the notary.
 *
 * It must never stay DISPATCHED (the journal saw it sent as tier 2, and the
 * bare tier-3 target has no query to ask): it goes AMBIGUOUS, its reason
 * naming the notary the DISPATCHED record names and what to restore, and
 * nothing is sent or written anywhere. Restoring the notary and resolving
 * with --redispatch then finishes it through the notary, applied once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoreConfig, TargetConfig } from '../../src/core/config/types.js'
import { CRASH_ENV, type CrashPoint } from '../../src/core/crash-points.js'
import { toBase64Url } from '../../src/core/crypto/encoding.js'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { toEffect, type EffectInput } from '../../src/core/effect.js'
import { chain, proposal } from '../../src/core/gate-context.js'
import { openInterlock } from '../../src/core/interlock.js'
import { notaryLog, type NotaryLog } from '../../src/core/notary/log.js'
import { notaryMiddleware } from '../../src/core/notary/middleware.js'
import { startNotaryServer, type NotaryServer } from '../../src/core/notary/server.js'
import { openSqliteNotaryStore } from '../../src/core/notary/sqlite/sqlite-notary-store.js'
import { openStore } from '../../src/core/stores/open.js'
import { runTsChild } from '../helpers/child.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'
import { relayReady, startRelayProc } from '../helpers/relay-procs.js'
import type { NotaryChildPlan } from '../crash/notary-child.js'

const agent = generateKeyPair('relay', 'agent-1')
const service = generateKeyPair('service', 'svc')
const alice = generateKeyPair('operator', 'alice')
const trusted = { agents: { 'agent-1': agent.publicKey }, services: { svc: service.publicKey } }
let dir = ''
let log: NotaryLog
let otherLog: NotaryLog
let notary: NotaryServer
let other: NotaryServer
let svc: HttpService

beforeAll(async () => {
  assertCliBuilt()
  dir = mkdtempSync(join(tmpdir(), 'interlock-notary-dropped-'))
  log = notaryLog(openSqliteNotaryStore(join(dir, 'notary.db')), trusted)
  notary = await startNotaryServer(log)
  // A second notary trusting the same keys: the one a config moved to.
  otherLog = notaryLog(openSqliteNotaryStore(join(dir, 'other-notary.db')), trusted)
  other = await startNotaryServer(otherLog)
  svc = await startHttpService({ around: notaryMiddleware({ notary: notary.url, service: 'svc', key: service }) })
  writeKeyFile(join(dir, 'relay.key'), agent)
  writeKeyFile(join(dir, 'alice.operator.key'), alice)
})
afterAll(async () => {
  await svc?.close()
  await notary?.close()
  await other?.close()
  await log?.close()
  await otherLog?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const tomlFor = (journal: string, extra = '') => `
[store]
path = "${journal}"

[relay]
key = "relay.key"

[[operators]]
name = "alice"
public_key = "${alice.publicKey}"

[targets.svc]
type = "http"
tier = 3
url = "${svc.url}/plain"
${extra}
`
const withNotary = (journal: string, url = notary.url) => tomlFor(journal, `notary = "${url}"\nnotary_services = { svc = "${service.publicKey}" }`)
const applications = (id: string) => svc.counts().plain[id] ?? 0
const attemptsAt = async (l: NotaryLog, id: string) => (await l.effect(id)).attempts.map((a) => a.state)

/** Submits through the notarized target in a child SIGKILLed at `point`: DISPATCHED in the journal. */
async function inFlight(journal: string, thread: string, point: CrashPoint): Promise<string> {
  const target: TargetConfig = { type: 'http', tier: 3, method: 'POST', headers: {}, timeoutMs: 5000, connectTimeoutMs: 2000, url: `${svc.url}/plain` }
  const input: EffectInput = { thread, target: 'svc', action: 'charge', args: { amount: '1.00' } }
  const plan: NotaryChildPlan = {
    store: { kind: 'sqlite', path: join(dir, journal) },
    name: 'svc',
    target,
    effects: [input],
    notary: { url: notary.url, agent: 'agent-1', seed: toBase64Url(agent.seed), services: trusted.services },
    signAsAgent: true,
  }
  const file = join(dir, `${thread}.json`)
  writeFileSync(file, JSON.stringify(plan))
  const run = await runTsChild('test/crash/notary-child.ts', [file], { [CRASH_ENV]: point })
  expect(run.signal, run.stderr).toBe('SIGKILL')
  const id = toEffect(input).id
  expect(await attemptsAt(log, id)).toEqual([point === 'after-intend' ? 'INTENDED' : 'PERFORMED'])
  return id
}

async function journaled(journal: string, id: string) {
  const store = await openStore({ kind: 'sqlite', path: join(dir, journal) } satisfies StoreConfig)
  try {
    return { snap: await store.get(id), history: await store.history(id) }
  } finally {
    await store.close()
  }
}

const POINTS: CrashPoint[] = ['after-intend', 'after-apply']
const appliedBefore = (point: CrashPoint) => (point === 'after-apply' ? 1 : 0)

describe('an effect sent through the notary, recovered with a config that no longer names it', () => {
  it.each(POINTS)('killed %s: its DISPATCHED record names the notary it went through', async (point) => {
    const id = await inFlight(`record-${point}.db`, `dropped-record-${point}`, point)
    const { snap, history } = await journaled(`record-${point}.db`, id)
    expect(snap!.state).toBe('DISPATCHED')
    expect(history.find((r) => r.state === 'DISPATCHED')!.data.notary).toBe(notary.url)
  })

  it.each(POINTS)('killed %s: the inline gate marks it AMBIGUOUS, naming the notary and what to restore; nothing is sent or written at the notary', async (point) => {
    const journal = `inline-${point}.db`
    const id = await inFlight(journal, `dropped-inline-${point}`, point)
    writeFileSync(join(dir, `inline-${point}.toml`), tomlFor(journal))
    const il = await openInterlock({ configPath: `inline-${point}.toml`, cwd: dir, env: {} })
    try {
      const report = await il.gate.recover()
      expect(report.effects.map((e) => [e.plan, e.action])).toEqual([['mark-ambiguous', 'marked-ambiguous']])
      const snap = (await il.store.get(id))!
      expect(snap.state).toBe('AMBIGUOUS')
      expect(snap.detail.notary).toBe(notary.url)
      expect(String(snap.detail.reason)).toContain(`sent through the notary at ${notary.url}`)
      expect(String(snap.detail.reason)).toContain(`Restore notary = "${notary.url}" and its notary_services on [targets.svc]`)
      expect(String(snap.detail.reason)).toContain(`interlock outbox resolve ${id} --redispatch`)
    } finally {
      await il.close()
    }
    expect(applications(id)).toBe(appliedBefore(point))
    // Not asked: no abort written on trust the config withdrew.
    expect(await attemptsAt(log, id)).toEqual([point === 'after-intend' ? 'INTENDED' : 'PERFORMED'])
    const verify = await interlock(['outbox', 'verify', '--config', `inline-${point}.toml`], { cwd: dir })
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
  })

  it.each(POINTS)('killed %s: interlock reconcile-effects marks it AMBIGUOUS (exit 10), its dry run plans so; restoring the notary and resolving --redispatch commits it, applied once', async (point) => {
    const journal = `reconcile-${point}.db`
    const id = await inFlight(journal, `dropped-reconcile-${point}`, point)
    writeFileSync(join(dir, `bare-${point}.toml`), tomlFor(journal))
    const dry = await interlock(['reconcile-effects', '--config', `bare-${point}.toml`, '--older-than', '0s', '--dry-run', '--json'], { cwd: dir })
    expect(dry.stdout + dry.stderr).toContain('"mark-ambiguous"')
    const run = await interlock(['reconcile-effects', '--config', `bare-${point}.toml`, '--older-than', '0s'], { cwd: dir })
    expect(run.code, run.stderr + run.stdout).toBe(10)
    const { snap } = await journaled(journal, id)
    expect(snap!.state).toBe('AMBIGUOUS')
    expect(String(snap!.detail.reason)).toContain(`sent through the notary at ${notary.url}`)
    expect(applications(id)).toBe(appliedBefore(point))

    // What the reason says to do: the notary restored, an operator's redispatch goes through it.
    writeFileSync(join(dir, `restored-${point}.toml`), withNotary(journal))
    const resolved = await interlock(['outbox', 'resolve', id, '--redispatch', '--yes', '--key', 'alice.operator.key', '--config', `restored-${point}.toml`], { cwd: dir })
    expect(resolved.code, resolved.stderr + resolved.stdout).toBe(0)
    expect((await journaled(journal, id)).snap!.state).toBe('COMMITTED')
    expect(applications(id)).toBe(1)
    expect(await attemptsAt(log, id)).toEqual(['PERFORMED'])
    const verify = await interlock(['outbox', 'verify', '--config', `restored-${point}.toml`], { cwd: dir })
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
  })
})

describe('interlock relay with the notary dropped from its config', () => {
  it('a relay killed after the service performed: the next relay, whose config no longer names the notary, takes the lease over and marks it AMBIGUOUS naming the notary, sending nothing', async () => {
    writeFileSync(join(dir, 'relay.toml'), withNotary('relay.db'))
    const il = await openInterlock({ configPath: 'relay.toml', cwd: dir, env: {} })
    let id: string
    try {
      id = (await il.outbox.submit({ thread: 'dropped-relay', target: 'svc', action: 'charge', args: { amount: '5.00' } })).effectId
    } finally {
      await il.close()
    }
    const args = (file: string) => ['--config', file, '--lease-ms', '1500', '--poll-ms', '100']
    const first = startRelayProc('relay-a', args('relay.toml'), dir, { [CRASH_ENV]: 'after-apply' })
    expect((await first.exited).signal, first.stderr).toBe('SIGKILL')
    expect((await journaled('relay.db', id)).snap!.state).toBe('DISPATCHED')
    writeFileSync(join(dir, 'relay-bare.toml'), tomlFor('relay.db'))
    const second = startRelayProc('relay-b', args('relay-bare.toml'), dir)
    try {
      await relayReady(second)
      const end = Date.now() + 30_000
      while ((await journaled('relay.db', id)).snap!.state === 'DISPATCHED' && Date.now() < end) await new Promise((r) => setTimeout(r, 200))
      const { snap } = await journaled('relay.db', id)
      expect(snap!.state, second.stderr).toBe('AMBIGUOUS')
      expect(String(snap!.detail.reason)).toContain(`sent through the notary at ${notary.url}`)
    } finally {
      second.child.kill('SIGTERM')
      await second.exited
    }
    expect(applications(id)).toBe(1)
    expect(await attemptsAt(log, id)).toEqual(['PERFORMED'])
  })
})

describe('an effect sent through one notary, recovered with a config that names another', () => {
  it.each(POINTS)('killed %s: AMBIGUOUS naming both notaries; the new one is not asked (an abort there would let it be sent again)', async (point) => {
    const journal = `moved-${point}.db`
    const id = await inFlight(journal, `moved-${point}`, point)
    writeFileSync(join(dir, `moved-${point}.toml`), withNotary(journal, other.url))
    const il = await openInterlock({ configPath: `moved-${point}.toml`, cwd: dir, env: {} })
    try {
      await il.gate.recover()
      const snap = (await il.store.get(id))!
      expect(snap.state).toBe('AMBIGUOUS')
      expect(String(snap.detail.reason)).toContain(`sent through the notary at ${notary.url}`)
      expect(String(snap.detail.reason)).toContain(`now names the notary at ${other.url}`)
    } finally {
      await il.close()
    }
    expect(await attemptsAt(otherLog, id)).toEqual([])
    expect(applications(id)).toBe(appliedBefore(point))
  })
})

describe('a journal written before DISPATCHED named its notary', () => {
  it('an effect journaled at tier 2 whose target can no longer be asked goes AMBIGUOUS, saying so, instead of staying DISPATCHED', async () => {
    const journal = 'old.db'
    writeFileSync(join(dir, 'old.toml'), tomlFor(journal))
    const effect = toEffect({ thread: 'old-journal', target: 'svc', action: 'charge', args: { amount: '3.00' } })
    const store = await openStore({ kind: 'sqlite', path: join(dir, journal) })
    try {
      // As a notarized target journaled it before: tier 2, a DISPATCHED record with no data.
      const first = { effectId: effect.id, from: null, to: 'PROPOSED' as const, data: proposal(effect, 2), effect, tier: 2 as const }
      const written = await store.append(chain(first, [{ to: 'AUTHORIZED', data: {} }, { to: 'DISPATCHED', data: {} }]))
      expect(written.every((r) => r.ok)).toBe(true)
    } finally {
      await store.close()
    }
    const il = await openInterlock({ configPath: 'old.toml', cwd: dir, env: {} })
    try {
      const report = await il.gate.recover()
      expect(report.effects.map((e) => e.action)).toEqual(['marked-ambiguous'])
      const snap = (await il.store.get(effect.id))!
      expect(snap.state).toBe('AMBIGUOUS')
      expect(String(snap.detail.reason)).toMatch(/journaled at tier 2 .* target svc as configured now cannot be asked \(tier 3\)/)
    } finally {
      await il.close()
    }
    expect(applications(effect.id)).toBe(0)
  })
})

describe('a notary URL read from a ${VAR}', () => {
  it('is journaled scrubbed and compared scrubbed: a relay killed after the service performed is taken over and recovered through the notary, COMMITTED once, the URL nowhere in the journal', async () => {
    const env = { NOTARY_URL: notary.url }
    writeFileSync(join(dir, 'secret-url.toml'), withNotary('secret-url.db', '${NOTARY_URL}'))
    const il = await openInterlock({ configPath: 'secret-url.toml', cwd: dir, env })
    let id: string
    try {
      expect(il.targets.get('svc')!.notary).toBe('***')
      id = (await il.outbox.submit({ thread: 'secret-url', target: 'svc', action: 'charge', args: { amount: '4.00' } })).effectId
    } finally {
      await il.close()
    }
    const args = ['--config', 'secret-url.toml', '--lease-ms', '1500', '--poll-ms', '100']
    const first = startRelayProc('relay-a', args, dir, { ...env, [CRASH_ENV]: 'after-apply' })
    expect((await first.exited).signal, first.stderr).toBe('SIGKILL')
    const { snap, history } = await journaled('secret-url.db', id)
    expect(snap!.state).toBe('DISPATCHED')
    expect(history.find((r) => r.state === 'DISPATCHED')!.data.notary).toBe('***')
    expect(JSON.stringify(history)).not.toContain(notary.url)
    const second = startRelayProc('relay-b', args, dir, env)
    try {
      await relayReady(second)
      const end = Date.now() + 30_000
      while ((await journaled('secret-url.db', id)).snap!.state === 'DISPATCHED' && Date.now() < end) await new Promise((r) => setTimeout(r, 200))
      expect((await journaled('secret-url.db', id)).snap!.state, second.stderr).toBe('COMMITTED')
    } finally {
      second.child.kill('SIGTERM')
      await second.exited
    }
    expect(applications(id)).toBe(1)
    expect(await attemptsAt(log, id)).toEqual(['PERFORMED'])
  })
})
