/**
 * The relay's late write (docs/operators.md, "Known limitations";
 * src/core/relay/README.md, step 4): relay A passes its last lease check right before the request's
 * write and is stopped there (crash point `before-write`: the process
 * SIGSTOPs itself between the fence's yes and the write). Its lease runs out;
 * relay B takes the effect over in DISPATCHED, finds it not done and sends it
 * again; then A gets SIGCONT and its request, decided long before, reaches
 * the service. Two real `interlock relay` processes, one SQLite journal, the
 * demo's HTTP service.
 *
 * - notarized (tier 3 with `notary = "<url>"`, the service behind the
 *   notary's middleware): B aborts A's attempt at the notary and sends the
 *   next one; A's late attempt is refused by the service, `409
 *   {"error":"aborted"}`, and the ledger shows the effect applied once;
 * - the known limitation, without a notary (tier 2, asked through
 *   query_url): the same schedule applies it twice;
 * - the agent notarized but the service not checking the notary: twice as
 *   well, so it is the service's check that closes the gap.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CRASH_ENV, CRASH_MODE_ENV, PAUSED_PREFIX } from '../../../src/core/crash-points.js'
import { generateKeyPair, writeKeyFile } from '../../../src/core/crypto/keys.js'
import type { EffectInput } from '../../../src/core/effect.js'
import { openInterlock } from '../../../src/core/interlock.js'
import { ATTEMPT_HEADER, EFFECT_HEADER } from '../../../src/core/notary/headers.js'
import { notaryLog, type NotaryLog } from '../../../src/core/notary/log.js'
import { notaryMiddleware } from '../../../src/core/notary/middleware.js'
import { startNotaryServer, type NotaryServer } from '../../../src/core/notary/server.js'
import { openSqliteNotaryStore } from '../../../src/core/notary/sqlite/sqlite-notary-store.js'
import { openStore } from '../../../src/core/stores/open.js'
import { startHttpService, type HttpService } from '../../helpers/http-service.js'
import { relayReady, startRelayProc, type RelayProc } from '../../helpers/relay-procs.js'

const agent = generateKeyPair('relay', 'agent-1')
const service = generateKeyPair('service', 'svc')
// Long enough that a live relay A, on a loaded machine, renews its lease before it reaches the write.
const LEASE = ['--lease-ms', '2500', '--poll-ms', '100']
let dir = ''
let log: NotaryLog
let notary: NotaryServer
/** The service behind the notary's middleware, and the same service without it. */
let checking: HttpService
let plain: HttpService
/** What the checking service answered, per effect and attempt, in order. */
const answered: { effect: string; attempt: string; status: number; body: string }[] = []

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-late-write-'))
  log = notaryLog(openSqliteNotaryStore(join(dir, 'notary.db')), { agents: { 'agent-1': agent.publicKey }, services: { svc: service.publicKey } })
  notary = await startNotaryServer(log)
  const middleware = notaryMiddleware({ notary: notary.url, service: 'svc', key: service })
  checking = await startHttpService({
    around: (req, res, next) => {
      noteAnswer(res, String(req.headers[EFFECT_HEADER]), String(req.headers[ATTEMPT_HEADER]))
      middleware(req, res, next)
    },
  })
  plain = await startHttpService()
  writeKeyFile(join(dir, 'relay.key'), agent)
})
afterAll(async () => {
  await checking?.close()
  await plain?.close()
  await notary?.close()
  await log?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

function noteAnswer(res: ServerResponse, effect: string, attempt: string): void {
  const end = res.end.bind(res) as (...a: unknown[]) => ServerResponse
  let body = ''
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) body += chunk.toString()
    answered.push({ effect, attempt, status: res.statusCode, body })
    return end(chunk, ...rest)
  }) as typeof res.end
}

type Setup = 'notarized' | 'tier 2, no notary' | 'notarized agent, service not checking'

function toml(setup: Setup, journal: string): string {
  const svc = setup === 'notarized' ? checking : plain
  const target =
    setup === 'tier 2, no notary'
      ? `tier = 2\nurl = "${svc.url}/plain"\nquery_url = "${svc.url}/applied/{effect_id}"`
      : `tier = 3\nurl = "${svc.url}/plain"\nnotary = "${notary.url}"\nnotary_services = { svc = "${service.publicKey}" }`
  return `[store]\npath = "${journal}"\n\n[relay]\nkey = "relay.key"\n\n[targets.svc]\ntype = "http"\n${target}\ntimeout_ms = 60000\n`
}

async function journalOf(journal: string, id: string) {
  const store = await openStore({ kind: 'sqlite', path: join(dir, journal) })
  try {
    return (await store.history(id)).map((r) => r.state)
  } finally {
    await store.close()
  }
}

/** The state letter of /proc/<pid>/stat: T when stopped. */
function procState(p: RelayProc): string {
  const stat = readFileSync(`/proc/${p.child.pid}/stat`, 'utf8')
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!
}

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function stop(p: RelayProc | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return
  p.child.kill('SIGCONT')
  p.child.kill('SIGTERM')
  await p.exited
}

/**
 * A stops between its last lease check and its write; B takes the effect over and
 * finishes it; A resumes and writes. Returns the effect's id and the service it went to.
 */
async function lateWrite(setup: Setup, name: string) {
  const journal = `${name}.db`
  writeFileSync(join(dir, `${name}.toml`), toml(setup, journal))
  const input: EffectInput = { thread: name, target: 'svc', action: 'charge', args: { amount: '3.00' } }
  const il = await openInterlock({ configPath: `${name}.toml`, cwd: dir, env: {} })
  let id: string
  try {
    id = (await il.outbox.submit(input)).effectId
  } finally {
    await il.close()
  }
  const svc = setup === 'notarized' ? checking : plain
  const requests = () => svc.requests().filter((r) => r.effectId === id).length
  let a: RelayProc | undefined
  let b: RelayProc | undefined
  try {
    a = startRelayProc('relay-a', ['--config', `${name}.toml`, ...LEASE], dir, { [CRASH_ENV]: 'before-write', [CRASH_MODE_ENV]: 'pause' })
    const relayA = a
    await until(`relay A stops before its write\n${relayA.stderr}`, () => relayA.stderr.includes(`${PAUSED_PREFIX} before-write`) && procState(relayA) === 'T')
    // Stopped after its lease was asked: nothing has reached the service.
    expect(requests()).toBe(0)
    expect(await journalOf(journal, id)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED'])

    b = startRelayProc('relay-b', ['--config', `${name}.toml`, ...LEASE], dir)
    await relayReady(b)
    await until(`relay B commits the effect\n${b.stderr}`, async () => (await journalOf(journal, id)).at(-1) === 'COMMITTED')
    await stop(b)
    expect(svc.counts().plain[id]).toBe(1)
    const committed = await journalOf(journal, id)

    // A resumes where it stood: its request, long decided, now reaches the service.
    a.child.kill('SIGCONT')
    await until(`relay A's late request reaches the service\n${relayA.stderr}`, () => requests() === 2)
    // A's own records lose: B holds the lease. The journal is as B left it.
    await new Promise((r) => setTimeout(r, 300))
    expect(await journalOf(journal, id)).toEqual(committed)
    return { id, applied: svc.counts().plain[id] ?? 0 }
  } finally {
    await stop(b)
    await stop(a)
  }
}

describe("a relay stopped between its last lease check and its write, resumed after another relay finished the effect", () => {
  it('notarized target: the service refuses the late attempt (409 aborted, the notary has it aborted); applied once', async () => {
    const claimsDecided = async () => {
      const text = await (await fetch(`${notary.url}/metrics`)).text()
      return Number(/^interlock_notary_records_total\{kind="claim",status="decided"\} (\d+)$/m.exec(text)?.[1] ?? 0)
    }
    const before = await claimsDecided()
    const { id, applied } = await lateWrite('notarized', 'late-notarized')
    expect(applied).toBe(1)
    // B aborted attempt 1 (INTENDED by A, never claimed) and sent attempt 2; A's attempt 1 came late.
    const attempts = (await log.effect(id)).attempts
    expect(attempts.map((x) => [x.attempt, x.state])).toEqual([
      [1, 'ABORTED'],
      [2, 'PERFORMED'],
    ])
    const mine = answered.filter((x) => x.effect === id)
    expect(mine.map((x) => [x.attempt, x.status])).toEqual([
      ['2', 200],
      ['1', 409],
    ])
    expect(JSON.parse(mine[1]!.body)).toMatchObject({ error: 'aborted' })
    expect((await claimsDecided()) - before).toBe(1)
    expect(await log.verify(id)).toEqual([])
  })

  it('the known limitation, without a notary (tier 2): the same schedule applies the effect twice', async () => {
    const { applied } = await lateWrite('tier 2, no notary', 'late-tier2')
    expect(applied).toBe(2)
  })

  it('a notarized agent whose service does not check the notary: applied twice as well (the check at the service closes the gap)', async () => {
    const { id, applied } = await lateWrite('notarized agent, service not checking', 'late-unchecked')
    expect(applied).toBe(2)
    expect((await log.effect(id)).attempts.map((x) => x.state)).toEqual(['ABORTED', 'INTENDED'])
  })
})
