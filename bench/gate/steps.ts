/**
 * bench/gate/steps.ts: the gate against the durable-execution steps a user
 * would reach for instead, in one run, on one durable PostgreSQL:
 *   - Interlock: one no-op tier-1 effect through gate.submit (PostgreSQL store);
 *   - DBOS: a workflow of one no-op step (its system database on the same server);
 *   - Restate: one ctx.run in a handler, behind the real restate-server.
 * For each: sequential latency p50/p99 and effects/s, then 64 in flight.
 * Twice: with flushes as this disk makes them, and with every flush of every
 * server made to cost about 1 ms (peers/slow-flush.ts), as on a cloud volume.
 * Goal: the gate at least as fast as each, in both.
 *
 *   npx tsx bench/gate/steps.ts [--seconds 5] [--flush-delay-us 800] [--only plain|slow]
 * Needs Node.js 22+ (the peers' SDKs) and, for the slow run, strace.
 */
import { spawnSync } from 'node:child_process'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { dbosPeer } from './peers/dbos.js'
import { interlockPeer } from './peers/interlock.js'
import type { Peer } from './peers/peer.js'
import { startBenchPostgres } from './peers/postgres.js'
import { restatePeer } from './peers/restate.js'
import { calibrate, requireStrace } from './peers/slow-flush.js'

const args = process.argv.slice(2)
const opt = (name: string, dflt: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : dflt)
const seconds = Number(opt('--seconds', '5'))
const delayUs = Number(opt('--flush-delay-us', '800'))
const only = opt('--only', '')
const IN_FLIGHT = 64

interface Figures {
  name: string
  p50: number
  p99: number
  seq: number
  par: number
}

async function measure(peer: Peer): Promise<Figures> {
  for (let i = 0; i < 50; i++) await peer.one() // warm-up: connections, prepared statements, JIT
  const lat: number[] = []
  let end = performance.now() + seconds * 1000
  const t0 = performance.now()
  while (performance.now() < end) {
    const s = performance.now()
    await peer.one()
    lat.push(performance.now() - s)
  }
  const seq = lat.length / ((performance.now() - t0) / 1000)
  lat.sort((a, b) => a - b)
  let done = 0
  end = performance.now() + seconds * 1000
  const t1 = performance.now()
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < end) {
        await peer.one()
        done++
      }
    }),
  )
  const par = done / ((performance.now() - t1) / 1000)
  return { name: peer.name, p50: lat[Math.floor(lat.length / 2)]!, p99: lat[Math.floor(lat.length * 0.99)]!, seq, par }
}

async function round(label: string, flushDelayUs: number): Promise<Figures[]> {
  const flushMs = calibrate(flushDelayUs)
  console.log(`\n== ${label}: one write+fdatasync costs ${flushMs.toFixed(3)} ms here (median), load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)
  const server = await startBenchPostgres(flushDelayUs)
  const figures: Figures[] = []
  try {
    const admin = new pg.Client({ connectionString: server.url() })
    await admin.connect()
    await admin.query('CREATE DATABASE interlock_bench')
    await admin.query('CREATE DATABASE dbos_bench')
    await admin.end()
    const makers = [() => interlockPeer(server.url('interlock_bench')), () => dbosPeer(server.url('dbos_bench')), () => restatePeer(flushDelayUs)]
    for (const make of makers) {
      const peer = await make()
      try {
        const f = await measure(peer)
        figures.push(f)
        console.log(`${f.name.padEnd(24)} p50 ${f.p50.toFixed(2).padStart(6)} ms  p99 ${f.p99.toFixed(2).padStart(6)} ms  sequential ${f.seq.toFixed(0).padStart(6)}/s  ${IN_FLIGHT} in flight ${f.par.toFixed(0).padStart(6)}/s`)
      } finally {
        await peer.close()
      }
    }
  } finally {
    await server.stop()
  }
  const [us, ...peers] = figures
  for (const p of peers) {
    console.log(`Interlock ÷ ${p.name.padEnd(20)} sequential ${(us!.seq / p.seq).toFixed(2)}  ${IN_FLIGHT} in flight ${(us!.par / p.par).toFixed(2)}   (goal ≥ 1.00 each)`)
  }
  return figures
}

if (only === 'plain') await round('flushes as this disk makes them', 0)
else if (only === 'slow') {
  requireStrace()
  await round(`every flush delayed ${delayUs} µs (strace)`, delayUs)
} else {
  // Each round in a process of its own: DBOS registers a workflow once per process.
  for (const which of ['plain', 'slow']) {
    const r = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...args, '--only', which], { stdio: 'inherit' })
    if (r.status !== 0) process.exit(r.status ?? 1)
  }
}
process.exit(0)
