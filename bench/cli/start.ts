/**
 * bench/cli/start.ts: how long the built `interlock` takes to start and answer,
 * against the floor of any Node.js CLI (`node -e ''`) measured in the same run.
 *
 *   npm run build && npx tsx bench/cli/start.ts [--times 15] [--before <checkout>]
 *
 * Commands, each run --times times in a fresh project (init'd, the SQLite
 * default), interleaved so load moves them alike; the median of each, and
 * its ratio to the floor's median:
 *   --version                     oclif and nothing of ours
 *   outbox status --help          a command's code loaded, nothing opened
 *   outbox status --json          the config read, the store opened and counted
 * --before: another built checkout (a worktree at an earlier commit), its
 * commands run beside these, each with its ratio (this ÷ before).
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const times = Number(process.argv[process.argv.indexOf('--times') + 1] || 15) || 15
const bin = resolve(import.meta.dirname, '../../bin/run.js')
const beforeAt = process.argv.indexOf('--before')
const before = beforeAt > 0 ? resolve(process.argv[beforeAt + 1]!, 'bin/run.js') : undefined
const dir = mkdtempSync(join(tmpdir(), 'interlock-start-'))
const env = { PATH: process.env.PATH ?? '', HOME: dir, NO_COLOR: '1' }

function run(args: string[]): number {
  const t0 = performance.now()
  const r = spawnSync(process.execPath, args, { cwd: dir, env, encoding: 'utf8' })
  const ms = performance.now() - t0
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`)
  return ms
}

const commands: [string, string[]][] = [
  ['--version', ['--version']],
  ['outbox status --help', ['outbox', 'status', '--help']],
  ['outbox status --json', ['outbox', 'status', '--json']],
]
const cases: [string, string[]][] = [
  ["node -e ''", ['-e', '']],
  ...commands.flatMap(([name, args]): [string, string[]][] => [
    [`interlock ${name}`, [bin, ...args]],
    ...(before ? [[`  before: interlock ${name}`, [before, ...args]] as [string, string[]]] : []),
  ]),
]
try {
  run([bin, 'init'])
  const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0]
  console.log(`${times} runs each, interleaved; load ${load()} before`)
  const samples = cases.map(() => [] as number[])
  for (let i = 0; i < times; i++) cases.forEach(([, args], k) => samples[k]!.push(run(args)))
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const floor = median(samples[0]!)
  for (const [k, [name]] of cases.entries()) {
    const m = median(samples[k]!)
    const vsBefore = before && k > 0 && k % 2 === 1 ? `  ${(m / median(samples[k + 1]!)).toFixed(2)} × before` : ''
    console.log(`${name.padEnd(42)} ${m.toFixed(0).padStart(6)} ms  ${(m / floor).toFixed(2)} × node${vsBefore}`)
  }
  console.log(`load ${load()} after`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
