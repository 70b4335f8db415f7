/**
 * What the relay logs, one line per event, as text for people or as one JSON
 * object per line for journald and log shippers (`[relay] log_format`).
 *
 * Events: `outcome` (one per effect the relay finished working on: the relay
 * whose record settled it; under lease takeovers, no effect has two), `taken-over`
 * (an effect this relay lost midway, and where it stands), `retry`
 * (a try that failed and will be tried again), `lease-lost` (the relay's
 * lease ran out or was taken over, nothing sent), `fenced` (the target's own
 * check stopped the request before it was written), `refused` (nothing sent:
 * send-check.ts), `returned` (the service asked to wait; the lease is parked
 * until then), `failing` / `still-failing` / `recovered` (a store operation,
 * conditions.ts), `started`, `stopping`, `stopped`, `forgot-relays`.
 *
 * Every string is scrubbed of the config's secrets before it is written, in
 * either form.
 */
import type { State } from '../lifecycle.js'
import type { CommittedVia, OutcomeStatus, SubmitOutcome } from '../outcome.js'

export type LogLevel = 'info' | 'warn' | 'error'
export type LogFormat = 'text' | 'json'

export interface LogEntry {
  level: LogLevel
  event: string
  /** The line a person reads (the whole line in text form; `msg` in JSON). */
  msg: string
  effectId?: string
  target?: string
  state?: State
  outcome?: OutcomeStatus
  reason?: string
  /** Anything else the event carries (attempt, waitMs, notBefore, failingMs, attempts…). */
  [field: string]: string | number | boolean | undefined
}

export interface RelayLogOptions {
  relay: string
  format: LogFormat
  write: (line: string) => void
  /** Scrubs secrets from one string. */
  scrub: (text: string) => string
  now: () => Date
}

/** What a committed line adds to say what this relay did for it. */
const COMMITTED_NOTE: Record<CommittedVia, string> = {
  apply: '',
  query: ' (the service had already applied it)',
  journal: ' before this relay took it up; nothing sent',
}

export class RelayLog {
  constructor(private readonly o: RelayLogOptions) {}

  emit(entry: LogEntry): void {
    const { scrub } = this.o
    if (this.o.format === 'text') {
      this.o.write(scrub(`relay ${this.o.relay}: ${entry.msg}`))
      return
    }
    // time, level, event and relay first: what a reader of a raw line scans for.
    const { level, event, msg, ...fields } = entry
    const line: Record<string, string | number | boolean> = { time: this.o.now().toISOString(), level, event, relay: this.o.relay }
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) line[k] = typeof v === 'string' ? scrub(v) : v
    line.msg = scrub(msg)
    this.o.write(JSON.stringify(line))
  }

  /** An effect this relay lost midway (its lease ran out; another relay wrote first): where it stands, not this relay's outcome. */
  takenOver(target: string, outcome: SubmitOutcome): void {
    const state = outcome.status === 'in_flight' ? outcome.state : (outcome.status.toUpperCase() as State)
    this.emit({ event: 'taken-over', level: 'info', effectId: outcome.effectId, target, state, msg: `effect ${outcome.effectId} on ${target} was taken over by another writer (its lease ran out); it stands ${state}, and that writer logs its outcome` })
  }

  /** The one line for an effect the relay finished working on. */
  outcome(target: string, outcome: SubmitOutcome, from: State): void {
    const base = { event: 'outcome', effectId: outcome.effectId, target, outcome: outcome.status }
    const on = `effect ${outcome.effectId} on ${target}`
    switch (outcome.status) {
      case 'committed':
        return this.emit({ ...base, level: 'info', state: 'COMMITTED', via: outcome.via, msg: `${on} committed${COMMITTED_NOTE[outcome.via]}` })
      case 'held':
        return this.emit({ ...base, level: 'info', state: 'HELD', rule: outcome.rule, msg: `${on} held under rule "${outcome.rule}" for operators` })
      case 'rejected': {
        const reason = outcome.violations.join('; ')
        return this.emit({ ...base, level: 'info', state: 'REJECTED', reason, msg: `${on} rejected, nothing sent: ${reason}` })
      }
      case 'failed':
        return this.emit({ ...base, level: 'warn', state: 'FAILED', reason: outcome.reason, msg: `${on} failed: ${outcome.reason}` })
      case 'ambiguous':
        return this.emit({ ...base, level: 'warn', state: 'AMBIGUOUS', reason: outcome.reason, msg: `${on} is AMBIGUOUS, an operator must resolve it: ${outcome.reason}` })
      case 'in_flight': {
        const reason = outcome.reason ?? `left ${outcome.state}`
        if (outcome.notBefore) {
          return this.emit({ ...base, event: 'returned', level: 'info', state: outcome.state, reason, notBefore: outcome.notBefore, msg: `${on} waits until ${outcome.notBefore} (${outcome.state}), its lease parked until then: ${reason}` })
        }
        // From a state the relay was to move on: it stays for recovery (tries spent) or for the relay holding it now.
        return this.emit({ ...base, level: 'warn', state: outcome.state, from, reason, msg: `${on} left ${outcome.state}: ${reason}` })
      }
    }
  }
}

/** "12 s", "1.5 s": a duration as the log says it. */
export function secondsText(ms: number): string {
  return ms >= 10_000 || ms % 1000 === 0 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`
}
