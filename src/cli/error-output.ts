/**
 * Any error → what the CLI shows and the exit code it returns. Pure, so the
 * wording and the code table are tested without spawning the binary.
 *
 * Interlock errors carry their own code, exit code, hint and problems; oclif
 * parse errors (unknown flag, missing argument) are usage errors (exit 2);
 * anything else is unexpected (exit 1) and shows its stack only when
 * INTERLOCK_DEBUG=1, since a stack trace helps a maintainer, not a user.
 */
import { Errors } from '@oclif/core'
import { errorText, SHOWN_PROBLEMS, stackWithCauses } from '../core/error-text.js'
import { ConfigError, ExitCode, InterlockError } from '../core/errors.js'

export interface Failure {
  code: string
  exitCode: number
  message: string
  hint?: string
  problems?: string[]
  context: Record<string, unknown>
  /** Shown only in debug mode. */
  stack?: string
}

export function describeFailure(error: unknown, commandId?: string): Failure {
  if (error instanceof InterlockError) {
    return {
      code: error.code,
      exitCode: error.exitCode,
      message: error.message,
      hint: error.hint,
      problems: error instanceof ConfigError && error.problems.length > 0 ? [...error.problems] : undefined,
      context: { ...error.context },
      stack: stackWithCauses(error),
    }
  }
  if (error instanceof Errors.CLIError && 'parse' in error) {
    return {
      code: 'E_USAGE',
      exitCode: ExitCode.USAGE,
      message: error.message.replace(/\n?See more help with --help\s*$/, '').trim(),
      hint: `Run \`interlock ${commandId ? `${commandId.replace(/:/g, ' ')} ` : ''}--help\` for the flags and arguments it takes.`,
      context: {},
      stack: error.stack,
    }
  }
  if (error instanceof Errors.CLIError) {
    return { code: 'E_FAILURE', exitCode: error.oclif?.exit ?? ExitCode.FAILURE, message: error.message, context: {}, stack: error.stack }
  }
  const err = error instanceof Error ? error : new Error(String(error))
  return {
    code: 'E_UNEXPECTED',
    exitCode: ExitCode.FAILURE,
    message: err.message || err.name,
    hint: 'This is a bug or an unforeseen condition; rerun with INTERLOCK_DEBUG=1 for the stack trace and report it.',
    context: {},
    stack: stackWithCauses(err),
  }
}

export { SHOWN_PROBLEMS }

/** The CLI's stderr text of a failure: the same as an uncaught InterlockError's (core/error-text.ts). */
export function formatFailure(failure: Failure, debug: boolean): string {
  return errorText(failure, debug)
}

export function failureEnvelope(failure: Failure): { error: Record<string, unknown> } {
  const error: Record<string, unknown> = {
    code: failure.code,
    exitCode: failure.exitCode,
    message: failure.message,
    hint: failure.hint ?? null,
  }
  if (failure.problems) error.problems = failure.problems
  error.context = jsonSafe(failure.context)
  return { error }
}

// Context is free-form: make sure a bigint or a cycle cannot turn an error report into a crash.
function jsonSafe(value: Record<string, unknown>): Record<string, unknown> {
  const seen = new WeakSet<object>()
  return JSON.parse(
    JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'bigint') return v.toString()
      if (v instanceof Error) return { name: v.name, message: v.message }
      if (v !== null && typeof v === 'object') {
        if (seen.has(v)) return '[circular]'
        seen.add(v)
      }
      return v
    }) ?? '{}',
  ) as Record<string, unknown>
}
