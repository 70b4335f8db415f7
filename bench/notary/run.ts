/**
 * bench/notary: what the notary costs, on this machine, in one run.
 *
 * (a) Added latency per notarized effect: gate.submit, one at a time, on a
 *     SQLite journal, to the same local HTTP service reached two ways,
 *     interleaved in slices (so other load on the machine falls on both
 *     alike): the plain tier-3 target, and the same target notarized (read
 *     the effect, intend, send; the service's middleware claims and writes
 *     performed). p50/p99 of each and of the difference.
 * (b) Notary records/s on SQLite and PostgreSQL (embedded, durable): concurrent writers POSTing signed records
 *     (intend, claim, performed per effect) to `notary serve`'s HTTP API,
 *     and the log alone in-process (no HTTP), one writer.
 *
 *   npx tsx bench/notary/run.ts [--effects 400] [--records 3000] [--writers 8]
 */
import http from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { AddressInfo } from 'node:net'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { Gate } from '../../src/core/gate.js'
import { sha256Hex } from '../../src/core/hash.js'
import { notaryClient } from '../../src/core/notary/client.js'
import { notaryLog } from '../../src/core/notary/log.js'
import { notaryMiddleware, type Middleware } from '../../src/core/notary/middleware.js'
import { notarized } from '../../src/core/notary/notarized.js'
import { GENESIS, recordHash, signRecord } from '../../src/core/notary/records.js'
import { startNotaryServer } from '../../src/core/notary/server.js'
import { openSqliteNotaryStore } from '../../src/core/notary/sqlite/sqlite-notary-store.js'
import { openPostgresNotaryStore } from '../../src/core/notary/postgres/pg-notary-store.js'
import type { NotaryStore } from '../../src/core/notary/store.js'
import { startTestPostgres } from '../../test/helpers/postgres-server.js'
import { openStore } from '../../src/core/stores/open.js'
import { HttpTarget } from '../../src/core/targets/http/http-target.js'

const { values } = parseArgs({ options: { effects: { type: 'string', default: '400' }, records: { type: 'string', default: '3000' }, writers: { type: 'string', default: '8' } } })
const EFFECTS = Number(values.effects)
const RECORDS = Number(values.records)
const WRITERS = Number(values.writers)

const agent = generateKeyPair('relay', 'agent-1')
const service = generateKeyPair('service', 'svc')
const trusted = { agents: { 'agent-1': agent.publicKey }, services: { svc: service.publicKey } }
const dir = mkdtempSync(join(tmpdir(), 'interlock-bench-notary-'))

/** The service: answers 200 with a small JSON body, optionally behind a middleware. */
async function service_(around?: Middleware): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const handler = () => {
      req.resume()
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'))
    }
    if (around) around(req, res, handler)
    else handler()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()) }) }
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!
}
const ms = (x: number) => x.toFixed(2)

async function latency(): Promise<void> {
  const log = notaryLog(openSqliteNotaryStore(join(dir, 'notary-a.db')), trusted)
  const notary = await startNotaryServer(log)
  const plainSvc = await service_()
  const notarizedSvc = await service_(notaryMiddleware({ notary: notary.url, service: 'svc', key: service }))
  const store = await openStore({ kind: 'sqlite', path: join(dir, 'journal.db') })
  const plain = new HttpTarget('plain', { tier: 3, url: `${plainSvc.url}/x` })
  const lifted = notarized(new HttpTarget('lifted', { tier: 3, url: `${notarizedSvc.url}/x` }), { notary: notaryClient({ url: notary.url, writer: 'agent-1', key: agent }), services: trusted.services })
  const gate = new Gate({ store, targets: [plain, lifted] })
  const times: Record<'plain' | 'lifted', number[]> = { plain: [], lifted: [] }
  const one = async (target: 'plain' | 'lifted', i: number) => {
    const t0 = performance.now()
    const outcome = await gate.submit({ thread: `bench-${target}-${i % 50}`, target, action: 'ping', args: { i } })
    if (outcome.status !== 'committed') throw new Error(`${target} ${i}: ${JSON.stringify(outcome)}`)
    return performance.now() - t0
  }
  for (let i = 0; i < 20; i++) await one(i % 2 ? 'plain' : 'lifted', -1 - i) // warm-up, not counted
  const SLICE = 20
  for (let i = 0; i < EFFECTS; i += SLICE) {
    for (const target of ['plain', 'lifted'] as const) for (let j = i; j < Math.min(EFFECTS, i + SLICE); j++) times[target].push(await one(target, j))
  }
  await gate.close()
  await store.close()
  await plainSvc.close()
  await notarizedSvc.close()
  await notary.close()
  await log.close()
  const row = (name: string, xs: number[]) => `| ${name} | ${xs.length} | ${ms(pct(xs, 50))} | ${ms(pct(xs, 99))} |`
  console.log(`\n(a) gate.submit to a local HTTP service, SQLite journal, one at a time, interleaved slices of ${SLICE}\n`)
  console.log('| target | effects | p50 ms | p99 ms |\n|---|---|---|---|')
  console.log(row('plain tier 3', times.plain))
  console.log(row('notarized (tier 2 via notary)', times.lifted))
  console.log(`| added by the notary | | ${ms(pct(times.lifted, 50) - pct(times.plain, 50))} | ${ms(pct(times.lifted, 99) - pct(times.plain, 99))} |`)
}

type Opener = (tag: string) => Promise<NotaryStore>

async function throughput(storeName: string, open: Opener): Promise<void> {
  // Records prepared (signed) before the clock starts: what is measured is the notary, not the writers' signing.
  const effects = Math.ceil(RECORDS / 3)
  const chains = (tag: string) =>
    Array.from({ length: effects }, (_, i) => {
      const effect = sha256Hex(`${tag}-${i}`)
      const at = new Date().toISOString()
      const intend = signRecord({ effect, attempt: 1, kind: 'intend', writer: 'agent-1', at, body: {}, prev: GENESIS }, agent)
      const claim = signRecord({ effect, attempt: 1, kind: 'claim', writer: 'svc', at, body: {}, prev: recordHash(intend) }, service)
      const performed = signRecord({ effect, attempt: 1, kind: 'performed', writer: 'svc', at, body: { status: 200, body: { ok: true } }, prev: recordHash(claim) }, service)
      return [intend, claim, performed]
    })

  const inproc = notaryLog(await open('b'), trusted)
  const local = chains(`inproc-${storeName}`)
  let t0 = performance.now()
  for (const chain of local) for (const r of chain) {
    const a = await inproc.write(r)
    if (a.status !== 'written') throw new Error(`in-process: ${a.status} ${a.reason ?? ''}`)
  }
  const inprocRate = (effects * 3) / ((performance.now() - t0) / 1000)
  await inproc.close()

  const log = notaryLog(await open('c'), trusted)
  const notary = await startNotaryServer(log)
  const remote = chains(`http-${storeName}`)
  const agentHttp = new http.Agent({ keepAlive: true, maxSockets: WRITERS })
  const post = (body: string) =>
    new Promise<string>((resolve, reject) => {
      const req = http.request(`${notary.url}/v1/records`, { method: 'POST', agent: agentHttp, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = ''
        res.setEncoding('utf8').on('data', (d: string) => (text += d)).on('end', () => resolve(text))
      })
      req.on('error', reject)
      req.end(body)
    })
  let next = 0
  t0 = performance.now()
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      for (let i = next++; i < remote.length; i = next++) {
        for (const r of remote[i]!) {
          const a = JSON.parse(await post(JSON.stringify(r))) as { status: string }
          if (a.status !== 'written') throw new Error(`http: ${a.status}`)
        }
      }
    }),
  )
  const httpRate = (effects * 3) / ((performance.now() - t0) / 1000)
  agentHttp.destroy()
  await notary.close()
  await log.close()
  console.log(`\n(b) notary records/s, ${storeName} log, ${effects * 3} records (${effects} effects: intend, claim, performed), signed beforehand\n`)
  console.log('| path | writers | records/s |\n|---|---|---|')
  console.log(`| log in-process (no HTTP) | 1 | ${Math.round(inprocRate)} |`)
  console.log(`| POST /v1/records (notary serve) | ${WRITERS} | ${Math.round(httpRate)} |`)
}

try {
  console.log(`node ${process.version}, ${new Date().toISOString()}`)
  await latency()
  await throughput('SQLite', async (tag) => openSqliteNotaryStore(join(dir, `notary-${tag}.db`)))
  // The embedded PostgreSQL the tests use, durable (fsync on), or INTERLOCK_TEST_DATABASE_URL.
  const server = await startTestPostgres({ durable: true })
  if (!server.url) console.log(`\n(b) PostgreSQL: not measured (${server.error})`)
  else {
    try {
      await throughput('PostgreSQL', (tag) => openPostgresNotaryStore({ url: server.url, schema: `bench_notary_${tag}_${process.pid}` }))
    } finally {
      await server.stop()
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
