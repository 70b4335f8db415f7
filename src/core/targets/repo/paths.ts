/**
 * Paths named by effects and premises, kept inside the working repository.
 *
 * A path is repository-relative, written with "/", and may not leave the
 * repository: not by "..", not by being absolute, and not through a symbolic
 * link that points outside. Nothing may be written under `.git` (hooks there
 * would run code). Every refusal is an InputError naming the path.
 */
import { lstat, realpath } from 'node:fs/promises'
import path from 'node:path'
import { InputError } from '../../errors.js'

export interface RepoPath {
  /** Normalised repository-relative path, "/"-separated: the key used in premises. */
  rel: string
  /** Absolute path on disk. */
  abs: string
}

/** Lexical checks only; `resolveRepoPath` adds the symbolic-link check. */
export function normaliseRepoPath(rel: unknown): string {
  if (typeof rel !== 'string' || rel.length === 0) throw new InputError(`a repository path must be a non-empty string (got ${JSON.stringify(rel)})`)
  const shown = JSON.stringify(rel)
  if (rel.includes('\0')) throw new InputError(`path ${shown} contains a NUL byte`)
  if (rel.includes('\\')) throw new InputError(`path ${shown} contains a backslash; write repository paths with "/"`)
  if (path.posix.isAbsolute(rel) || /^[A-Za-z]:/.test(rel)) {
    throw new InputError(`path ${shown} is absolute; name files relative to the repository root`)
  }
  const norm = path.posix.normalize(rel).replace(/\/+$/, '')
  if (norm === '..' || norm.startsWith('../')) throw new InputError(`path ${shown} leaves the repository`)
  if (norm === '.' || norm === '') throw new InputError(`path ${shown} names the repository itself, not a file`)
  if (norm.split('/').some((seg) => seg.toLowerCase() === '.git')) throw new InputError(`path ${shown} is inside .git`)
  return norm
}

/** `root` must be the repository's real path (see RepoTarget, which resolves it once). */
export async function resolveRepoPath(root: string, rel: unknown): Promise<RepoPath> {
  const norm = normaliseRepoPath(rel)
  const abs = path.join(root, ...norm.split('/'))
  // The deepest part of the path that exists decides where a write lands.
  let probe = abs
  for (;;) {
    const st = await lstat(probe).catch(() => null)
    if (st) break
    const parent = path.dirname(probe)
    if (parent === probe) break
    probe = parent
  }
  const real = await realpath(probe)
  if (real !== root && !real.startsWith(root + path.sep)) {
    throw new InputError(`path ${JSON.stringify(rel)} leaves the repository through a symbolic link`)
  }
  return { rel: norm, abs }
}
