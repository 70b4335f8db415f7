/**
 * Durations given on the command line: a whole number and a unit (ms, s, m,
 * h, d), as in interlock.toml; where a flag allows it, zero in any unit ("0",
 * "0s") means none.
 */
import { parseDuration } from '../core/config/policy.js'
import { UsageError } from '../core/errors.js'

export function durationFlag(flag: string, given: string, options: { zero?: boolean } = {}): number {
  if (options.zero && /^0+(ms|s|m|h|d)?$/.test(given.trim())) return 0
  try {
    return parseDuration(given.trim())
  } catch {
    throw new UsageError(`--${flag} ${JSON.stringify(given)} is not a duration`, {
      hint: `Give a whole number and a unit: ms, s, m, h or d (e.g. 90s, 5m, 90d)${options.zero ? '; 0s for none' : ''}.`,
    })
  }
}
