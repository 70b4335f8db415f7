/**
 * `notary = "<url>"` on a target in interlock.toml: every way the agent side
 * is built from the file (openInterlock's inline gate, `interlock
 * reconcile-effects`) recovers an effect caught in flight through the notary,
 * as COMMITTED, instead of through the bare tier-3 target (AMBIGUOUS).
 * A child process submits through notarized(target) and is SIGKILLed after
 * the service performed and before the journal heard of it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runChecks } from '../../src/core/check/run.js'
import { parseConfig } from '../../src/core/config/load.js'
import type { StoreConfig, TargetConfig } from '../../src/core/config/types.js'
import { CRASH_ENV } from '../../src/core/crash-points.js'
import { sha256Hex } from '../../src/core/hash.js'
import { toBase64Url } from '../../src/core/crypto/encoding.js'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { toEffect, type EffectInput } from '../../src/core/effect.js'
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
let dir = ''
let log: NotaryLog
let notary: NotaryServer
let svc: HttpService

beforeAll(async () => {
  assertCliBuilt()
  dir = mkdtempSync(join(tmpdir(), 'interlock-notary-config-'))
  log = notaryLog(openSqliteNotaryStore(join(dir, 'notary.db')), { agents: { 'agent-1': agent.publicKey }, services: { svc: service.publicKey } })
  notary = await startNotaryServer(log)
  svc = await startHttpService({ around: notaryMiddleware({ notary: notary.url, service: 'svc', key: service }) })
  writeKeyFile(join(dir, 'relay.key'), agent)
})
afterAll(async () => {
  await svc?.close()
  await notary?.close()
  await log?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const tomlFor = (journal: string, extra = '') => `
[store]
path = "${journal}"

[relay]
key = "relay.key"

[targets.svc]
type = "http"
tier = 3
url = "${svc.url}/plain"
${extra}
`
const notarizedToml = (journal: string) => tomlFor(journal, `notary = "${notary.url}"\nnotary_services = { svc = "${service.publicKey}" }`)

/** Submits through the notarized target in a child killed after the service performed: DISPATCHED in the journal, PERFORMED at the notary. */
async function inFlight(journal: string, thread: string): Promise<string> {
  const target: TargetConfig = { type: 'http', tier: 3, method: 'POST', headers: {}, timeoutMs: 5000, connectTimeoutMs: 2000, url: `${svc.url}/plain` }
  const input: EffectInput = { thread, target: 'svc', action: 'charge', args: { amount: '1.00' } }
  const store: StoreConfig = { kind: 'sqlite', path: join(dir, journal) }
  const plan: NotaryChildPlan = {
    store,
    name: 'svc',
    target,
    effects: [input],
    notary: { url: notary.url, agent: 'agent-1', seed: toBase64Url(agent.seed), services: { svc: service.publicKey } },
  }
  const file = join(dir, `${thread}.json`)
  writeFileSync(file, JSON.stringify(plan))
  const run = await runTsChild('test/crash/notary-child.ts', [file], { [CRASH_ENV]: 'after-apply' })
  expect(run.signal, run.stderr).toBe('SIGKILL')
  const id = toEffect(input).id
  expect((await log.effect(id)).attempts.map((a) => a.state)).toEqual(['PERFORMED'])
  return id
}

async function stateIn(journal: string, id: string) {
  const store = await openStore({ kind: 'sqlite', path: join(dir, journal) })
  try {
    return (await store.get(id))?.state
  } finally {
    await store.close()
  }
}

describe('a target with notary = "<url>" in interlock.toml', () => {
  it('openInterlock: the inline gate recovers the effect through the notary as COMMITTED, applied once', async () => {
    const id = await inFlight('inline.db', 'config-inline')
    writeFileSync(join(dir, 'inline.toml'), notarizedToml('inline.db'))
    const il = await openInterlock({ configPath: 'inline.toml', cwd: dir, env: {} })
    try {
      expect(il.targets.get('svc')!.tier).toBe(2)
      await il.gate.recover()
      expect((await il.store.get(id))!.state).toBe('COMMITTED')
    } finally {
      await il.close()
    }
    expect(svc.counts().plain[id]).toBe(1)
  })

  it('the same file without the notary key cannot settle it: AMBIGUOUS, naming the notary it went through, never COMMITTED (what the key changes)', async () => {
    const id = await inFlight('bare.db', 'config-bare')
    writeFileSync(join(dir, 'bare.toml'), tomlFor('bare.db'))
    const il = await openInterlock({ configPath: 'bare.toml', cwd: dir, env: {} })
    try {
      await il.gate.recover()
      // The bare tier-3 target cannot be asked, and the notary the DISPATCHED record names is not asked without the config's trust.
      const snap = (await il.store.get(id))!
      expect(snap.state).toBe('AMBIGUOUS')
      expect(String(snap.detail.reason)).toContain(`sent through the notary at ${notary.url}`)
    } finally {
      await il.close()
    }
  })

  it('interlock reconcile-effects recovers it through the notary as COMMITTED', async () => {
    const id = await inFlight('reconcile.db', 'config-reconcile')
    writeFileSync(join(dir, 'reconcile.toml'), notarizedToml('reconcile.db'))
    const run = await interlock(['reconcile-effects', '--config', 'reconcile.toml', '--older-than', '0s'], { cwd: dir })
    expect(run.code, run.stderr + run.stdout).toBe(0)
    expect(await stateIn('reconcile.db', id)).toBe('COMMITTED')
    expect(svc.counts().plain[id]).toBe(1)
  })
})

describe('interlock relay with a notarized target', () => {
  it('a relay killed after the service performed: the next relay takes the lease over and recovers it through the notary as COMMITTED, applied once', async () => {
    writeFileSync(join(dir, 'relay.toml'), notarizedToml('relay.db'))
    const input: EffectInput = { thread: 'config-relay', target: 'svc', action: 'charge', args: { amount: '2.00' } }
    const il = await openInterlock({ configPath: 'relay.toml', cwd: dir, env: {} })
    let id: string
    try {
      id = (await il.outbox.submit(input)).effectId
    } finally {
      await il.close()
    }
    const first = startRelayProc('relay-a', ['--config', 'relay.toml', '--lease-ms', '1500', '--poll-ms', '100'], dir, { [CRASH_ENV]: 'after-apply' })
    const died = await first.exited
    expect(died.signal, first.stderr).toBe('SIGKILL')
    expect(await stateIn('relay.db', id)).toBe('DISPATCHED')
    expect((await log.effect(id)).attempts.map((a) => a.state)).toEqual(['PERFORMED'])
    const second = startRelayProc('relay-b', ['--config', 'relay.toml', '--lease-ms', '1500', '--poll-ms', '100'], dir)
    try {
      await relayReady(second)
      const end = Date.now() + 30_000
      while ((await stateIn('relay.db', id)) !== 'COMMITTED' && Date.now() < end) await new Promise((r) => setTimeout(r, 200))
      expect(await stateIn('relay.db', id), second.stderr).toBe('COMMITTED')
      expect(svc.counts().plain[id]).toBe(1)
    } finally {
      second.child.kill('SIGTERM')
      await second.exited
    }
  })
})

describe('validation of the notary keys', () => {
  const parse = (extra: string, tier = 3, relay = '[relay]\nkey = "relay.key"\n') =>
    parseConfig(`${relay}\n[targets.svc]\ntype = "http"\ntier = ${tier}\nurl = "http://127.0.0.1:1/x"\n${extra}\n`, { file: join(dir, 'v.toml') })
  const problems = (f: () => unknown) => {
    try {
      f()
    } catch (e) {
      return `${(e as Error).message} ${((e as { problems?: string[] }).problems ?? []).join(' | ')}`
    }
    return 'no error'
  }

  it('refuses notary on a tier other than 3, and a notary that is not an http(s) URL, naming the key', () => {
    expect(problems(() => parse('notary = "http://127.0.0.1:7311"', 2))).toMatch(/targets\.svc\.notary: only used when tier = 3/)
    expect(problems(() => parse('notary = "ftp://x"'))).toMatch(/targets\.svc\.notary: must be an http/)
    expect(problems(() => parse(`notary_services = { svc = "${service.publicKey}" }`))).toMatch(/targets\.svc.*notary/)
  })

  it('a notarized target without an agent key or trusted services is refused when built, naming what is missing', async () => {
    writeFileSync(join(dir, 'nokey.toml'), `[targets.svc]\ntype = "http"\ntier = 3\nurl = "http://127.0.0.1:1/x"\nnotary = "${notary.url}"\nnotary_services = { svc = "${service.publicKey}" }\n`)
    const a = await openInterlock({ configPath: 'nokey.toml', cwd: dir, env: {} })
    try {
      expect(problems(() => a.targets)).toMatch(/no agent key.*targets\.svc\.notary: needs \[relay\] key/)
    } finally {
      await a.close()
    }
    writeFileSync(join(dir, 'nosvc.toml'), `[relay]\nkey = "relay.key"\n[targets.svc]\ntype = "http"\ntier = 3\nurl = "http://127.0.0.1:1/x"\nnotary = "${notary.url}"\n`)
    const b = await openInterlock({ configPath: 'nosvc.toml', cwd: dir, env: {} })
    try {
      expect(problems(() => b.targets)).toMatch(/trusts no service.*targets\.svc\.notary_services/)
    } finally {
      await b.close()
    }
  })
})

describe('interlock check on a notarized target', () => {
  const rowOf = async (toml: string, file: string) => {
    writeFileSync(join(dir, file), toml)
    const report = await runChecks({ cwd: dir, path: file, env: {}, only: ['targets'], timeoutMs: 3000 })
    const found = report.checks.find((c) => c.id === 'targets.svc.notary')
    if (!found) throw new Error(JSON.stringify(report.checks))
    return found
  }

  it('passes when the notary answers /healthz and trusts the agent key, and writes nothing there', async () => {
    const row = await rowOf(notarizedToml('check.db'), 'check-ok.toml')
    expect(row?.status, row?.detail).toBe('pass')
    expect(row!.detail).toMatch(/trusts agent agent-1/)
    expect((await log.effect(sha256Hex('interlock check: notary trust probe'))).attempts).toEqual([])
  })

  it('fails, naming the key to add, when the notary does not trust the agent key', async () => {
    const stranger = generateKeyPair('relay', 'agent-2')
    writeKeyFile(join(dir, 'stranger.key'), stranger)
    const row = await rowOf(notarizedToml('check.db').replace('relay.key', 'stranger.key'), 'check-untrusted.toml')
    expect(row?.status).toBe('fail')
    expect(row!.detail).toMatch(/does not trust agent agent-2/)
    expect(row!.fix).toMatch(/\[notary\.agents\]/)
  })

  it('fails when the notary does not answer', async () => {
    const row = await rowOf(notarizedToml('check.db').replace(`notary = "${notary.url}"`, 'notary = "http://127.0.0.1:9"'), 'check-down.toml')
    expect(row?.status).toBe('fail')
    expect(row!.detail).toMatch(/did not answer/)
  })
})

describe('the notary\'s /metrics', () => {
  it('counts the records offered, by kind and answer, in Prometheus text', async () => {
    const before = await (await fetch(`${notary.url}/metrics`)).text()
    const count = (text: string, labels: string) => Number(new RegExp(`^interlock_notary_records_total\\{${labels}\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)
    const stranger = generateKeyPair('relay', 'agent-9')
    const e = sha256Hex('metrics-probe')
    const { notaryClient } = await import('../../src/core/notary/client.js')
    expect((await notaryClient({ url: notary.url, writer: 'agent-1', key: agent }).write(e, 1, 'intend')).status).toBe('written')
    expect((await notaryClient({ url: notary.url, writer: 'agent-9', key: stranger }).write(e, 1, 'abort')).status).toBe('untrusted')
    const res = await fetch(`${notary.url}/metrics`)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    const after = await res.text()
    expect(after).toMatch(/^# TYPE interlock_notary_records_total counter$/m)
    expect(count(after, 'kind="intend",status="written"') - count(before, 'kind="intend",status="written"')).toBe(1)
    expect(count(after, 'kind="abort",status="untrusted"') - count(before, 'kind="abort",status="untrusted"')).toBe(1)
    expect(Number(/^interlock_notary_last_write_timestamp_seconds (\S+)$/m.exec(after)?.[1])).toBeGreaterThan(0)
  })
})
