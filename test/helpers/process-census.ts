/**
 * The machine's processes as /proc shows them (Linux): who started whom, in
 * which process group and session, since when. The leak check
 * (leak-check.ts) uses it to tell the processes a test run started from
 * everything else on the machine, even after they were orphaned.
 */
import { readdirSync, readFileSync } from 'node:fs'

export interface ProcessEntry {
  pid: number
  ppid: number
  pgid: number
  sid: number
  /** Start time in clock ticks since boot: with the pid, names one process even after its pid is reused. */
  start: number
  state: string
  /** The comm name from stat (up to 15 characters); commandLine() has the rest. */
  name: string
}

export function processKey(p: Pick<ProcessEntry, 'pid' | 'start'>): string {
  return `${p.pid}@${p.start}`
}

export function readProcess(pid: number): ProcessEntry | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name is in parentheses and may itself hold spaces or parentheses.
    const close = stat.lastIndexOf(')')
    const fields = stat.slice(close + 2).split(' ')
    return {
      pid,
      state: fields[0]!,
      ppid: Number(fields[1]),
      pgid: Number(fields[2]),
      sid: Number(fields[3]),
      start: Number(fields[19]),
      name: stat.slice(stat.indexOf('(') + 1, close),
    }
  } catch {
    return undefined // gone between the listing and the read
  }
}

/** The pids in /proc now: cheap (one directory read), for a census that reads only what is new. */
export function listPids(): number[] {
  return readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number)
}

export function listProcesses(): ProcessEntry[] {
  return listPids().flatMap((pid) => readProcess(pid) ?? [])
}

/** The process's command line, or its comm name when that cannot be read (a zombie, a kernel thread). */
export function commandLine(p: ProcessEntry): string {
  try {
    return readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ') || p.name
  } catch {
    return p.name
  }
}

/** Whether the process's environment holds `name=value` (false when it cannot be read). */
export function environmentHas(pid: number, name: string, value: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`${name}=${value}`)
  } catch {
    return false
  }
}
