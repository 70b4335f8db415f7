/**
 * CPU time of the processes a bench/relay drain runs on, from /proc (Linux):
 * the PostgreSQL server (postmaster, its live backends, and what its reaped
 * backends used) and the machine as a whole. Divided by the items drained it
 * says what each item cost the server and the workers, which a rate alone
 * cannot: on a shared 2-core machine a rate moves with the neighbours' load.
 */
import { readdirSync, readFileSync } from 'node:fs'

const TICKS_PER_SECOND = 100

/** Seconds of CPU the server used so far: the postmaster with its reaped children, and every live child. */
export function serverCpuSeconds(postmasterPid: number): number {
  let ticks = 0
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const stat = statOf(Number(name))
    if (!stat) continue
    if (stat.pid === postmasterPid) ticks += stat.utime + stat.stime + stat.cutime + stat.cstime
    else if (stat.ppid === postmasterPid) ticks += stat.utime + stat.stime
  }
  return ticks / TICKS_PER_SECOND
}

/** Seconds of CPU one process (all its threads) used so far: restate-server's, for its peer. */
export function processCpuSeconds(pid: number): number {
  const stat = statOf(pid)
  if (!stat) throw new Error(`no process ${pid}`)
  return (stat.utime + stat.stime) / TICKS_PER_SECOND
}

/** Busy and total CPU seconds of the whole machine (all cores), from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!
  const f = line.split(/\s+/).slice(1).map(Number)
  const total = f.reduce((a, b) => a + b, 0)
  const idle = (f[3] ?? 0) + (f[4] ?? 0)
  return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND }
}

interface Stat {
  pid: number
  ppid: number
  utime: number
  stime: number
  cutime: number
  cstime: number
}

function statOf(pid: number): Stat | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { pid, ppid: Number(f[1]), utime: Number(f[11]), stime: Number(f[12]), cutime: Number(f[13]), cstime: Number(f[14]) }
}
