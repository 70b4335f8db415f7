/**
 * Flushes made to cost what they cost on a typical cloud volume (about 1 ms),
 * for the benchmark's servers only: this machine's disk flushes in ~0.06 ms,
 * which flatters whoever commits most often.
 *
 * A preloaded library cannot do it for every peer: restate-server is a
 * static binary. So every durable server here (PostgreSQL, restate-server)
 * is started under strace, which delays the fsync family at the syscall
 * level; `--seccomp-bpf` stops the traced process on those calls alone, so
 * nothing else it does pays for the tracing. `calibrate` measures what a
 * flush then costs, in the same run, so the figures say it rather than
 * assume it. Needs strace (Debian: `apt-get install strace`).
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const FLUSHES = 'fsync,fdatasync'

export function requireStrace(): void {
  const r = spawnSync('strace', ['-V'], { encoding: 'utf8' })
  if (r.error || r.status !== 0) throw new Error('slow flushes need strace on PATH (Debian: apt-get install strace)')
}

/** `command args` as a child whose every flush is delayed by delayUs (0: run it as is). */
export function spawnWithFlushDelay(delayUs: number, command: string, args: string[], opts: SpawnOptions): ChildProcess {
  if (delayUs <= 0) return spawn(command, args, opts)
  return spawn('strace', ['-f', '-qq', '--seccomp-bpf', '-o', '/dev/null', '-e', `trace=${FLUSHES}`, '-e', `inject=${FLUSHES}:delay_exit=${delayUs}`, command, ...args], opts)
}

/** What one write+fdatasync costs on this disk, in ms, with the given delay (median of n). */
export function calibrate(delayUs: number, n = 200): number {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-flush-'))
  try {
    const script = `import os,time,sys
fd=os.open(sys.argv[1],os.O_WRONLY|os.O_CREAT)
ts=[]
for i in range(${n}):
  t=time.perf_counter(); os.write(fd,b'x'*100); os.fdatasync(fd); ts.append(time.perf_counter()-t)
ts.sort(); print(ts[len(ts)//2]*1000)`
    const args = ['-c', script, join(dir, 'f')]
    const r =
      delayUs > 0
        ? spawnSync('strace', ['-f', '-qq', '--seccomp-bpf', '-o', '/dev/null', '-e', `trace=${FLUSHES}`, '-e', `inject=${FLUSHES}:delay_exit=${delayUs}`, 'python3', ...args], { encoding: 'utf8' })
        : spawnSync('python3', args, { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`calibration failed: ${r.stderr}`)
    return Number(r.stdout.trim())
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
