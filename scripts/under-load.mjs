#!/usr/bin/env node
// Runs a command with CPU-burning processes beside it, as a loaded CI runner would be:
//
//   node scripts/under-load.mjs [--burners 2] [--runs 1] -- <command> [args…]
//
// Each burner is a child process spinning on one core until the command ends; the
// command runs --runs times in a row (all of them, whatever each ends with); this script
// exits 0 when every run did, else with the first failing run's code, after a summary line. The burners are killed on every way out (the command's end, ^C, SIGTERM).
import { spawn } from 'node:child_process'

const argv = process.argv.slice(2)
const split = argv.indexOf('--')
if (split < 0 || split === argv.length - 1) {
  console.error('usage: node scripts/under-load.mjs [--burners N] [--runs N] -- <command> [args…]')
  process.exit(2)
}
const option = (name, fallback) => {
  const i = argv.indexOf(name)
  if (i < 0 || i > split) return fallback
  const n = Number(argv[i + 1])
  if (!Number.isInteger(n) || n < 0) {
    console.error(`${name} takes a whole number, not ${argv[i + 1]}`)
    process.exit(2)
  }
  return n
}
const burners = option('--burners', 2)
const runs = option('--runs', 1)
const [command, ...args] = argv.slice(split + 1)

const burning = Array.from({ length: burners }, () =>
  spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
)
const stop = () => {
  for (const b of burning) b.kill('SIGKILL')
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => (stop(), process.exit(130)))

const codes = []
for (let run = 1; run <= runs; run++) {
  console.error(`under-load: run ${run} of ${runs}, ${burners} burner(s) beside it: ${[command, ...args].join(' ')}`)
  const code = await new Promise((done) => {
    const child = spawn(command, args, { stdio: 'inherit' })
    child.on('error', (e) => (console.error(e.message), done(127)))
    child.on('exit', (c, s) => done(c ?? (s ? 128 : 1)))
  })
  console.error(`under-load: run ${run} exited ${code}`)
  codes.push(code)
}
stop()
console.error(`under-load: ${codes.filter((c) => c === 0).length} of ${runs} run(s) exited 0 (${codes.join(', ')})`)
process.exit(codes.find((c) => c !== 0) ?? 0)
