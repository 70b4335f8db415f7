/**
 * How an error reads to a person, in one place for the CLI and the library:
 * `Error (<code>): <message>`, the problems found, `Try this: <hint>`, and the
 * stack (with its causes) only when asked for (INTERLOCK_DEBUG=1), since a
 * stack trace helps a maintainer, not whoever mistyped a key. The CLI prints
 * this on stderr (cli/error-output.ts); an InterlockError a program leaves
 * uncaught prints the same (errors.ts), not our internals' stack.
 */

export interface ErrorLines {
  code: string
  message: string
  hint?: string
  problems?: readonly string[]
  /** Shown only in debug mode. */
  stack?: string
}

/**
 * Problems a person is shown; the rest are counted. A generated file with
 * thousands of problems printed 200 KB, and the hint scrolled out of sight;
 * the first ones are what to fix first anyway. `--json` keeps them all.
 */
export const SHOWN_PROBLEMS = 50

export function errorText(e: ErrorLines, debug: boolean): string {
  const lines = [`Error (${e.code}): ${e.message}`]
  const problems = e.problems ?? []
  for (const problem of problems.slice(0, SHOWN_PROBLEMS)) lines.push(`  - ${problem.split('\n').join('\n    ')}`)
  if (problems.length > SHOWN_PROBLEMS) lines.push(`  … and ${problems.length - SHOWN_PROBLEMS} more (${problems.length} in all; --json lists every one)`)
  if (e.hint) lines.push(`Try this: ${e.hint}`)
  if (debug && e.stack) lines.push('', e.stack)
  return lines.join('\n')
}

/** The stack, then each cause's, five deep at most. */
export function stackWithCauses(error: Error): string | undefined {
  const parts: string[] = []
  let current: unknown = error
  for (let depth = 0; current instanceof Error && depth < 5; depth++) {
    parts.push(depth === 0 ? (current.stack ?? current.message) : `Caused by: ${current.stack ?? current.message}`)
    current = current.cause
  }
  return parts.length > 0 ? parts.join('\n') : undefined
}
