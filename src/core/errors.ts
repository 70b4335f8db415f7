/**
 * One error base class for everything Interlock can tell a user.
 *
 * Each error carries a stable `code` (for `--json` and for programs), an
 * `exitCode` the CLI returns unchanged, an optional `hint` ("Try this: ...")
 * and readonly `context`. Unexpected failures keep their `cause`.
 *
 * Exit codes are part of the public contract and documented in docs/cli.md,
 * "Exit codes".
 */
import { inspect } from 'node:util'
import { errorText, stackWithCauses } from './error-text.js'

export const ExitCode = {
  OK: 0,
  /** A check failed, or a generic failure with no better code. */
  FAILURE: 1,
  /** Bad command-line usage (unknown flag, missing argument). */
  USAGE: 2,
  /** interlock.toml is missing, unreadable or invalid; or the installation is: an unsupported Node.js, a package a feature needs. */
  CONFIG: 3,
  /** The store cannot be opened, reached, or is at the wrong schema version. */
  STORE: 4,
  /** The journal failed verification (hash chain, signatures, torn records). */
  INTEGRITY: 5,
  /** A state conflict: an illegal transition or a concurrent writer won. */
  CONFLICT: 6,
  /** The named effect, target or file does not exist. */
  NOT_FOUND: 7,
  /** A target refused or could not be reached. */
  TARGET: 8,
  /** Work finished, but AMBIGUOUS effects wait for an operator. */
  AMBIGUOUS: 10,
  /** COMMITTED effects failed at the service since (a refund that failed later): an operator must act. */
  LATER_FAILED: 11,
} as const
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode]

export interface InterlockErrorOptions {
  hint?: string
  context?: Record<string, unknown>
  cause?: unknown
}

/** Where an error records its class names, read by instanceof across copies of the package. */
const ERROR_CLASSES = Symbol.for('agent-interlock.error-classes')

function classNames(from: Function): string[] {
  const names: string[] = []
  for (let c: unknown = from; typeof c === 'function' && c !== Error; c = Object.getPrototypeOf(c)) names.push((c as Function).name)
  return names
}

export class InterlockError extends Error {
  readonly code: string
  readonly exitCode: ExitCode
  readonly hint?: string
  readonly context: Readonly<Record<string, unknown>>

  constructor(code: string, exitCode: ExitCode, message: string, options: InterlockErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    this.code = code
    this.exitCode = exitCode
    this.hint = options.hint
    this.context = Object.freeze({ ...(options.context ?? {}) })
    Object.defineProperty(this, ERROR_CLASSES, { value: classNames(new.target), enumerable: false })
  }

  /**
   * `instanceof` also holds for an error made by another copy of
   * agent-interlock in the same process: a target module imports
   * DispatchFault from the project's copy while a globally installed CLI runs
   * the gate, and the gate must still read the fault's kind rather than take
   * it for an unknown outcome.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true
    const names = value !== null && typeof value === 'object' ? (value as { [ERROR_CLASSES]?: unknown })[ERROR_CLASSES] : undefined
    return Array.isArray(names) && names.includes(this.name)
  }

  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, hint: this.hint, context: this.context }
  }

  /**
   * What Node prints for it (console.log, or a program that leaves it
   * uncaught): the lines the CLI prints for it, not a stack into our
   * internals, which is shown with INTERLOCK_DEBUG=1 as in the CLI.
   */
  [inspect.custom](): string {
    const problems = (this as { problems?: readonly string[] }).problems
    return errorText({ code: this.code, message: this.message, hint: this.hint, problems, stack: stackWithCauses(this) }, process.env.INTERLOCK_DEBUG === '1')
  }
}

export class UsageError extends InterlockError {
  constructor(message: string, options: InterlockErrorOptions = {}) {
    super('E_USAGE', ExitCode.USAGE, message, options)
  }
}

export class ConfigError extends InterlockError {
  /** Every problem found, each naming its key path. */
  readonly problems: readonly string[]
  constructor(message: string, problems: string[] = [], options: InterlockErrorOptions = {}) {
    super('E_CONFIG', ExitCode.CONFIG, message, options)
    this.problems = problems
  }
}

export class StoreError extends InterlockError {
  constructor(message: string, options: InterlockErrorOptions = {}) {
    super('E_STORE', ExitCode.STORE, message, options)
  }
}

/** The store is unreachable or a write was not confirmed durable: nothing may be dispatched. */
export class StoreUnavailableError extends InterlockError {
  constructor(message: string, options: InterlockErrorOptions = {}) {
    super('E_STORE_UNAVAILABLE', ExitCode.STORE, message, options)
  }
}

export class SchemaVersionError extends InterlockError {
  constructor(message: string, options: InterlockErrorOptions = {}) {
    super('E_SCHEMA_VERSION', ExitCode.STORE, message, options)
  }
}

export class IntegrityError extends InterlockError {
  constructor(message: string, options: InterlockErrorOptions = {}) {
    super('E_INTEGRITY', ExitCode.INTEGRITY, message, options)
  }
}

export class IllegalTransitionError extends InterlockError {
  constructor(readonly from: string | null, readonly to: string, effectId?: string) {
    super(
      'E_ILLEGAL_TRANSITION',
      ExitCode.CONFLICT,
      `illegal transition ${from ?? '(none)'} → ${to}${effectId ? ` for effect ${effectId}` : ''}`,
      { context: { from, to, effectId } },
    )
  }
}

/** Another writer moved the effect first (compare-and-set lost). */
export class ConflictError extends InterlockError {
  constructor(message: string, options: InterlockErrorOptions = {}) {
    super('E_CONFLICT', ExitCode.CONFLICT, message, options)
  }
}

/**
 * `interlock check` found failures. The command printed its whole report
 * (table or --json) already, so `reported` tells the CLI to give the exit
 * code and print nothing more: the report is the error message.
 */
export class CheckFailedError extends InterlockError {
  readonly reported = true
  /** exitCode: 1, or 3 when a failure is a mistake in interlock.toml itself (check/exit-code.ts). */
  constructor(failures: number, exitCode: ExitCode = ExitCode.FAILURE, options: InterlockErrorOptions = {}) {
    super('E_CHECK_FAILED', exitCode, `${failures} check${failures === 1 ? '' : 's'} failed`, options)
  }
}

export class NotFoundError extends InterlockError {
  constructor(message: string, options: InterlockErrorOptions = {}) {
    super('E_NOT_FOUND', ExitCode.NOT_FOUND, message, options)
  }
}

export class TargetError extends InterlockError {
  constructor(message: string, options: InterlockErrorOptions = {}) {
    super('E_TARGET', ExitCode.TARGET, message, options)
  }
}

/** A package only one feature uses (an optional peer dependency), as that feature needs it. */
export interface PackageNeed {
  name: string
  /** What needs it, as the subject of "need": "symbol premises". */
  feature: string
  /** The versions it works with, for people: "5 or 6". */
  versions: string
  /** What to give `npm install`: "typescript@5". */
  install: string
}

/**
 * A package one feature needs is not installed, or not in a version it works
 * with (typescript 7 has no compiler API for JavaScript): the feature names it
 * instead of failing deep inside a call with Node's ERR_MODULE_NOT_FOUND or a
 * TypeError. Exit 3, as for a config mistake: the installation, not the input,
 * has to change.
 */
export class MissingPackageError extends InterlockError {
  readonly packageName: string
  constructor(need: PackageNeed, options: InterlockErrorOptions & { installed?: string } = {}) {
    const wanted = `${need.feature} need ${need.name} ${need.versions}`
    super('E_MISSING_PACKAGE', ExitCode.CONFIG, options.installed === undefined ? `${wanted}, which is not installed` : `${wanted}, not the ${options.installed} installed`, {
      hint: `Install it in the project that depends on agent-interlock: npm install ${need.install}`,
      ...options,
      context: { package: need.name, versions: need.versions, ...(options.installed === undefined ? {} : { installed: options.installed }), ...options.context },
    })
    this.packageName = need.name
  }
}

/** Interlock was started by a Node.js that package.json's "engines" does not name (src/cli/node-runtime.ts). */
export class UnsupportedNodeError extends InterlockError {
  constructor(supported: string, running: string) {
    super('E_NODE_VERSION', ExitCode.CONFIG, `Interlock needs Node.js ${supported}; this is ${running}`, {
      hint: `Run it with Node.js ${supported} (https://nodejs.org/en/download).`,
      context: { supported, running },
    })
  }
}

/** Bad effect payload or target input (e.g. an amount finer than the currency allows). */
export class InputError extends InterlockError {
  constructor(message: string, options: InterlockErrorOptions = {}) {
    super('E_INPUT', ExitCode.USAGE, message, options)
  }
}

/**
 * How a target's `apply` reports what happened on the wire. The gate decides
 * by tier what each means; a target only says what it knows.
 */
export type DispatchFaultKind =
  /** The request never reached the service (e.g. connection refused before writing): safe to retry. */
  | 'not-sent'
  /** The request may have reached the service and the outcome is unknown (timeout, reset, 5xx after writing). */
  | 'unknown'
  /**
   * Whether the effect happened cannot be learned, by asking or by sending again
   * (an S3 object overwritten by another writer in an unversioned bucket; a 500
   * Stripe saved for the key, with no refund to be found): AMBIGUOUS for an
   * operator, at any tier, never sent again on its own. Thrown by apply or query.
   */
  | 'unknowable'
  /** The service definitely refused and did nothing (e.g. 4xx validation, 405 not mergeable). */
  | 'refused'
  /** A precondition pushed down to the service failed (e.g. GitHub 409 head moved, S3 412): a premise violation. */
  | 'premise'
  /**
   * The service asks to retry later with the same request (Stripe 409 in flight, Slack 429,
   * a rate limit); `retryAfterMs` is how long it asked to wait. A wait longer than the
   * gate's `max_wait_ms` returns the effect to AUTHORIZED until then (lifecycle.ts).
   */
  | 'retry-later'
  /**
   * The service says the effect did not take place, under this request or any earlier
   * one, and the request cannot simply be sent again (e.g. an idempotency key the service
   * has since expired): the effect goes back to AUTHORIZED, its premises are checked again
   * and it is sent afresh, after `retryAfterMs` if given. A target says this only when it
   * knows; a maybe is 'unknown'.
   */
  | 'not-applied'
  /** Not sent: the fence said this process no longer holds the effect (a relay's lease ran out). */
  | 'fenced'

export class DispatchFault extends InterlockError {
  constructor(
    readonly kind: DispatchFaultKind,
    message: string,
    options: InterlockErrorOptions & { retryAfterMs?: number; answer?: Record<string, unknown> } = {},
  ) {
    super(`E_DISPATCH_${kind.toUpperCase().replace(/-/g, '_')}`, ExitCode.TARGET, message, options)
    this.retryAfterMs = options.retryAfterMs
    this.answer = options.answer
  }
  readonly retryAfterMs?: number
  /**
   * What the service answered with its refusal, as JSON (an MCP tool's own
   * error result): journaled with FAILED, scrubbed of secrets like a receipt,
   * so whoever asks again later gets the service's own words.
   */
  readonly answer?: Record<string, unknown>
}

export function isInterlockError(e: unknown): e is InterlockError {
  return e instanceof InterlockError
}
