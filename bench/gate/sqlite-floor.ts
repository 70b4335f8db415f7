/**
 * bench/gate, SQLite floors: what one durable append can cost on this disk,
 * measured in alternating slices so that load from other work on the machine
 * falls on every line alike.
 *
 *   (a)  write+fdatasync of a 201-byte line to a growing file (run.ts's a);
 *   (a1) a one-row INSERT into a one-table SQLite journal in WAL mode with
 *        synchronous=FULL: the cheapest durable SQLite commit;
 *   (a2) the rows a gate step writes, alone (run.ts's a', sqlite-baselines.ts):
 *        the least an append can cost with this schema;
 *   (a3) the same with the secondary indexes dropped (what they cost);
 *   (s)  store.append itself, one step per call, four per effect;
 *   (s0) the same with synchronous=OFF: its CPU alone (never a setting the
 *        store runs with; it refuses a connection without FULL).
 *
 * Since b needs four appends per effect, x ÷ a is the most b ÷ (a/4) can reach
 * when every append costs what line x costs.
 *
 *   npx tsx bench/gate/sqlite-floor.ts [--seconds 1] [--slices 5]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { toEffect } from '../../src/core/effect.js'
import type { Store } from '../../src/core/stores/store.js'
import { openStore } from '../../src/core/stores/open.js'
import { appendRows, rawAppender } from './sqlite-baselines.js'

const args = process.argv.slice(2)
const flag = (name: string, fallback: number) => Number(args[args.indexOf(name) + 1] || 0) || fallback
const seconds = flag('--seconds', 1)
const slices = flag('--slices', 5)

type Line = { label: string; rate(): Promise<number> }

function timed(step: () => void): number {
  let n = 0
  const end = performance.now() + seconds * 1000
  while (performance.now() < end) {
    step()
    n++
  }
  return n / seconds
}

async function timedAsync(step: () => Promise<void>, perCall: number): Promise<number> {
  let n = 0
  const start = performance.now()
  const end = start + seconds * 1000
  while (performance.now() < end) {
    await step()
    n++
  }
  return (n * perCall) / ((performance.now() - start) / 1000)
}

function rawLine(dir: string): Line {
  const raw = rawAppender(join(dir, 'raw.log'))
  return { label: '(a)  raw write+fdatasync appends', rate: async () => timed(raw.step) }
}

function oneRowLine(dir: string): Line {
  const db = new Database(join(dir, 'one-row.db'))
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)')
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)')
  const v = 'x'.repeat(200)
  return { label: '(a1) one-row SQLite WAL commits (synchronous=FULL)', rate: async () => timed(() => insert.run(v)) }
}

async function rowsLine(dir: string, bare = false): Promise<Line> {
  const rows = await appendRows(join(dir, bare ? 'bare-rows.db' : 'rows.db'), bare)
  return {
    label: bare ? '(a3) the same without secondary indexes' : '(a2) the rows of one append, alone (installed schema)',
    rate: async () => timed(rows.step),
  }
}

async function storeLine(dir: string, label: string, name: string, durable: boolean): Promise<Line> {
  const store: Store = await openStore({ kind: 'sqlite', path: join(dir, `${name}.db`) }, { groupCommit: false })
  if (!durable) (store as unknown as { db: Database.Database }).db.pragma('synchronous = OFF')
  let i = 0
  const effectSteps = async () => {
    const e = toEffect({ thread: 'floor', target: 'noop', action: 'noop', args: { i: i++ } })
    await store.append([{ effectId: e.id, from: null, to: 'PROPOSED', data: {}, effect: e, tier: 1 }])
    await store.append([{ effectId: e.id, from: 'PROPOSED', to: 'AUTHORIZED', data: {} }])
    await store.append([{ effectId: e.id, from: 'AUTHORIZED', to: 'DISPATCHED', data: {} }])
    await store.append([{ effectId: e.id, from: 'DISPATCHED', to: 'COMMITTED', data: { receipt: { ok: e.id }, via: 'apply' } }])
  }
  return { label, rate: () => timedAsync(effectSteps, 4) }
}

function print(label: string, rates: number[], a: number[]): void {
  const sorted = [...rates].sort((x, y) => x - y)
  const median = sorted[sorted.length >> 1]!
  // Ratio per slice (the same moment's disk), then the median of those.
  const ratios = rates.map((r, i) => r / a[i]!).sort((x, y) => x - y)
  console.log(`${label.padEnd(56)} ${median.toFixed(0).padStart(7)} /s  ${(1e6 / median).toFixed(0).padStart(4)} µs   ÷ a ${ratios[ratios.length >> 1]!.toFixed(2)}`)
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-sqlite-floor-'))
  try {
    const lines = [
      rawLine(dir),
      oneRowLine(dir),
      await rowsLine(dir),
      await rowsLine(dir, true),
      await storeLine(dir, '(s)  store.append, one step per call', 'store', true),
      await storeLine(dir, '(s0) store.append with synchronous=OFF: CPU alone', 'store-cpu', false),
    ]
    const rates = lines.map(() => [] as number[])
    for (let s = 0; s < slices; s++) for (const [k, line] of lines.entries()) rates[k]!.push(await line.rate())
    console.log(`bench/gate sqlite-floor: ${slices} alternating slices of ${seconds}s, median; ÷ a is the median of per-slice ratios`)
    for (const [k, line] of lines.entries()) print(line.label, rates[k]!, rates[0]!)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
