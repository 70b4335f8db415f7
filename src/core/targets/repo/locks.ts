/**
 * Lock files left behind by a killed git.
 *
 * git takes `index.lock` (and `refs/heads/<b>.lock`, `HEAD.lock`) by creating
 * the file exclusively and removes it when done; a git killed in between (OOM,
 * SIGKILL, our own timeout) leaves it, and every later commit fails with
 * "Unable to create '…/index.lock': File exists" until someone removes it. An
 * apply must not fail forever because of that, nor remove a lock a live git
 * holds (that would corrupt the index). git writes no owner pid into the lock,
 * so we decide like this:
 *
 * - a lock younger than `minAgeMs` is live: a git that just took it is working;
 * - on Linux, a lock is live while any process named `git*` has its working
 *   directory inside the repository (git chdirs to the top of the working
 *   tree, so a git working on it is found whoever started it); a process whose
 *   directory we may not read counts as inside, to stay on the safe side;
 * - without /proc, a lock is stale only once older than `fallbackAgeMs`.
 *
 * A stale lock is removed only if it is still the same file (inode and mtime)
 * after the decision, so a lock re-taken meanwhile by a new git is left alone.
 */
import { readdir, readFile, readlink, realpath, stat, unlink } from 'node:fs/promises'
import path from 'node:path'

export interface StaleLockPolicy {
  /** Default 1000. */
  minAgeMs?: number
  /** Where /proc is missing (macOS, BSD): default 10 minutes. */
  fallbackAgeMs?: number
  /** Injected for tests; default Date.now. */
  now?: () => number
}

const LOCK_MESSAGE = /Unable to create '([^']+\.lock)': File exists/

/** The lock path git names in its "File exists" message, or null. */
export function lockPathFromGitError(stderr: string): string | null {
  return LOCK_MESSAGE.exec(stderr)?.[1] ?? null
}

/**
 * Removes `lockPath` if it is stale and lies under one of `gitDirs` (the git
 * directory, and the common one of a linked worktree); returns true when it
 * was removed (or was already gone), false when a live git may own it.
 */
export async function clearStaleLock(lockPath: string, repoRoot: string, gitDirs: readonly string[], policy: StaleLockPolicy = {}): Promise<boolean> {
  const named = path.resolve(repoRoot, lockPath)
  const dir = await realpath(path.dirname(named)).catch(() => path.dirname(named))
  const resolved = path.join(dir, path.basename(named))
  // Only ever unlink a *.lock file inside the repository's git directory.
  if (!resolved.endsWith('.lock') || !gitDirs.some((d) => resolved.startsWith(d + path.sep))) return false
  const before = await stat(resolved).catch(() => null)
  if (!before) return true
  const now = (policy.now ?? Date.now)()
  const age = now - before.mtimeMs
  if (age < (policy.minAgeMs ?? 1000)) return false
  const live = await gitProcessInside([repoRoot, ...gitDirs])
  if (live === true) return false
  if (live === null && age < (policy.fallbackAgeMs ?? 10 * 60_000)) return false
  const after = await stat(resolved).catch(() => null)
  if (!after) return true
  if (after.ino !== before.ino || after.mtimeMs !== before.mtimeMs) return false
  await unlink(resolved).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw e
  })
  return true
}

/** true: some git works in one of `dirs`; false: none does; null: cannot tell (no /proc). */
async function gitProcessInside(dirs: string[]): Promise<boolean | null> {
  let pids: string[]
  try {
    pids = (await readdir('/proc')).filter((p) => /^\d+$/.test(p))
  } catch {
    return null
  }
  for (const pid of pids) {
    const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')
    if (!comm.startsWith('git')) continue
    const cwd = await readlink(`/proc/${pid}/cwd`).catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? '' : null))
    if (cwd === null) return true
    if (dirs.some((d) => cwd === d || cwd.startsWith(d + path.sep))) return true
  }
  return false
}
