/**
 * Files the outbox writes for keeping (`outbox export`, `outbox anchor`) are
 * evidence: an earlier one is never overwritten. Opening with 'wx' refuses an
 * existing file in the same call that creates it, so there is no window for
 * a race between checking and writing.
 */
import { openSync } from 'node:fs'
import { ExitCode, InterlockError } from '../errors.js'

/** Opens `path` for writing only if it does not exist yet; refuses (code, exit 1) otherwise. */
export function openNewFile(path: string, what: 'export' | 'anchor' | 'archive' | 'checkpoint', code: string): number {
  try {
    return openSync(path, 'wx')
  } catch (cause) {
    throw new InterlockError(code, ExitCode.FAILURE, `cannot write ${what} file ${path}: ${(cause as Error).message}`, {
      hint: `Choose a new --out: an ${what} never overwrites a file.`,
      context: { path },
      cause,
    })
  }
}
