/**
 * UNSAFE test switches. Each one breaks one of the gate's promises on
 * purpose, so the crash harness (test/crash/) can show it catches the break:
 * a harness that cannot fail proves nothing (negative controls).
 *
 *   INTERLOCK_UNSAFE_SEND_BEFORE_DURABLE=1  apply before DISPATCHED is journaled
 *   INTERLOCK_UNSAFE_NEW_KEY_ON_RETRY=1     a fresh idempotency key on every retry (HTTP target)
 *   INTERLOCK_UNSAFE_SKIP_PREMISE_CHECK=1   dispatch without re-checking premises
 *   INTERLOCK_UNSAFE_RESEND_TIER3=1         re-send tier 3 on recovery instead of AMBIGUOUS
 *
 * Inert unless the variable is exactly "1". Never set one outside a test.
 * Read on every use (a string compare) so a test can switch them in-process.
 */
export const UNSAFE_SWITCHES = {
  sendBeforeDurable: 'INTERLOCK_UNSAFE_SEND_BEFORE_DURABLE',
  newKeyOnRetry: 'INTERLOCK_UNSAFE_NEW_KEY_ON_RETRY',
  skipPremiseCheck: 'INTERLOCK_UNSAFE_SKIP_PREMISE_CHECK',
  resendTier3: 'INTERLOCK_UNSAFE_RESEND_TIER3',
} as const
export type UnsafeSwitch = keyof typeof UNSAFE_SWITCHES

export function unsafe(name: UnsafeSwitch): boolean {
  return process.env[UNSAFE_SWITCHES[name]] === '1'
}
