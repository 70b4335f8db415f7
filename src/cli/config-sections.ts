/**
 * What `config show` prints of [[operators]], [policy], [reconcile] and
 * [relay], in interlock.toml's own key names, defaults included: the sections
 * that decide who may release, what waits for them, and how the relay and
 * reconcile run. Each is a table (head, rows) or, when empty, one line
 * saying what that means.
 */
import { DEFAULTS } from '../core/config/defaults.js'
import type { InterlockConfig, PolicyCondition } from '../core/config/types.js'
import type { Cell } from './table.js'

export type Section = { head: string[]; rows: Cell[][] } | { line: string }

export function operatorsSection(config: InterlockConfig): Section {
  if (config.operators.length === 0) return { line: 'No operators: nobody can release, deny or resolve an effect.' }
  return { head: ['operator', 'public_key'], rows: config.operators.map((o) => [o.name, o.publicKey]) }
}

export function policySection(config: InterlockConfig): Section {
  const rules = config.policy.rules
  if (rules.length === 0) return { line: 'No policy rules: no effect waits for operators.' }
  return {
    head: ['policy rule', 'target', 'action', 'tier', 'when', 'quorum', 'release_ttl'],
    rows: rules.map((r) => [r.name, r.target ?? 'any', r.action ?? 'any', r.tier ?? 'any', r.when.map(condition).join('\n') || 'always', r.quorum, duration(r.releaseTtlMs)]),
  }
}

export function reconcileSection(config: InterlockConfig): Section {
  const reconcile = config.reconcile ?? { olderThanMs: DEFAULTS.reconcileOlderThanMs, concurrency: DEFAULTS.reconcileConcurrency }
  return {
    head: ['reconcile', 'value'],
    rows: [
      ['older_than', duration(reconcile.olderThanMs)],
      ['concurrency', reconcile.concurrency],
    ],
  }
}

export function relaySection(config: InterlockConfig): Section {
  const relay = config.relay
  return {
    head: ['relay', 'value'],
    rows: [
      ['id', relay?.id ?? '<host>-<pid> (default)'],
      ['key', relay?.key ?? 'none (interlock relay needs --key)'],
      ['concurrency', relay?.concurrency ?? DEFAULTS.relayConcurrency],
      ['lease_ms', relay?.leaseMs ?? DEFAULTS.relayLeaseMs],
      ['poll_ms', relay?.pollMs ?? DEFAULTS.relayPollMs],
      ['health_port', relay?.healthPort ?? 'not served'],
      ['log_format', relay?.logFormat ?? DEFAULTS.relayLogFormat],
      ['stall_ms', relay?.stallMs ?? DEFAULTS.relayStallMs],
      ['heartbeat_retention', duration(relay?.heartbeatRetentionMs ?? DEFAULTS.relayHeartbeatRetentionMs)],
    ],
  }
}

const COMPARISONS: [keyof PolicyCondition, string][] = [
  ['above', '>'],
  ['atLeast', '>='],
  ['below', '<'],
  ['atMost', '<='],
]

/** `amount > 500.00 (EUR only)`: one condition, as the rule compares it. */
function condition(c: PolicyCondition): string {
  const parts = COMPARISONS.filter(([key]) => c[key] !== undefined).map(([key, op]) => `${c.arg} ${op} ${c[key]}`)
  return `${parts.join(' and ') || c.arg}${c.currency ? ` (${c.currency} only)` : ''}`
}

const UNITS: [string, number][] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
]

/** Milliseconds in the largest unit interlock.toml accepts that divides them: 300000 → "5m". */
export function duration(ms: number): string {
  for (const [unit, size] of UNITS) if (ms > 0 && ms % size === 0) return `${ms / size}${unit}`
  return `${ms}ms`
}
