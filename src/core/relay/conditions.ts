/**
 * Failing conditions of the relay's store operations (claiming, renewing
 * leases, the heartbeat, working on effects…), each logged as an operator
 * needs it: once when it starts failing, a reminder at most every
 * `reminderMs` while it lasts (with the latest error), and once when it
 * recovers, saying for how long and how many attempts failed. A permission
 * error that a DBA fixes an hour later is then three kinds of line, not one
 * line and silence, nor one line per retry.
 *
 * Each operation is its own condition: a heartbeat that succeeds says nothing
 * about claims that keep failing.
 */
import { StoreUnavailableError } from '../errors.js'
import { secondsText, type RelayLog } from './relay-log.js'

interface Failing {
  what: string
  since: number
  attempts: number
  lastError: string
  lastLoggedAt: number
  unreachable: boolean
}

export interface FailingCondition {
  key: string
  what: string
  failingMs: number
  attempts: number
  lastError: string
  /** The last attempt failed to reach the store at all (its server down, or a standby now). */
  unreachable: boolean
}

export class Conditions {
  private readonly failing = new Map<string, Failing>()

  constructor(
    private readonly log: RelayLog,
    /** Monotonic milliseconds. */
    private readonly now: () => number,
    private readonly reminderMs: number,
  ) {}

  /** One failed attempt of `key` ("claiming effects" is `what`). */
  failed(key: string, what: string, error: unknown, fields: { effectId?: string; target?: string } = {}): void {
    const message = error instanceof Error ? error.message : String(error)
    const unreachable = error instanceof StoreUnavailableError && error.context.unreachable === true
    const now = this.now()
    const f = this.failing.get(key)
    if (!f) {
      this.failing.set(key, { what, since: now, attempts: 1, lastError: message, lastLoggedAt: now, unreachable })
      const on = fields.effectId ? ` (effect ${fields.effectId})` : ''
      this.log.emit({ level: 'error', event: 'failing', condition: key, reason: message, ...fields, msg: `${what} failed${on}: ${message}; retrying` })
      return
    }
    f.attempts++
    f.lastError = message
    f.unreachable = unreachable
    if (now - f.lastLoggedAt < this.reminderMs) return
    f.lastLoggedAt = now
    const failingMs = Math.round(now - f.since)
    this.log.emit({
      level: 'error',
      event: 'still-failing',
      condition: key,
      reason: message,
      failingMs,
      attempts: f.attempts,
      msg: `${f.what} still failing after ${secondsText(failingMs)}, ${f.attempts} attempts: ${message}`,
    })
  }

  /** An attempt of `key` succeeded: says so once if it had been failing. */
  ok(key: string): void {
    const f = this.failing.get(key)
    if (!f) return
    this.failing.delete(key)
    const failingMs = Math.round(this.now() - f.since)
    this.log.emit({
      level: 'info',
      event: 'recovered',
      condition: key,
      failingMs,
      attempts: f.attempts,
      msg: `${f.what} recovered after ${secondsText(failingMs)}, ${f.attempts} failed attempt${f.attempts === 1 ? '' : 's'}`,
    })
  }

  /** The longest-failing of these conditions, if any fails. */
  longest(keys: readonly string[]): FailingCondition | undefined {
    let worst: FailingCondition | undefined
    for (const key of keys) {
      const f = this.failing.get(key)
      if (!f) continue
      const failingMs = this.now() - f.since
      if (!worst || failingMs > worst.failingMs) worst = { key, what: f.what, failingMs, attempts: f.attempts, lastError: f.lastError, unreachable: f.unreachable }
    }
    return worst
  }

  /** The longest-failing of these conditions whose last attempt could not reach the store, if any. */
  unreachable(keys: readonly string[]): FailingCondition | undefined {
    return this.longest(keys.filter((k) => this.failing.get(k)?.unreachable))
  }
}
