/** Schema pieces every target section shares, defined once so their wording and limits agree. */

export const DURATION_MAX_MS = 600_000

/** A duration in milliseconds, 1 ms to 10 minutes. */
export const durationMs = (description: string) => ({ type: 'integer', minimum: 1, maximum: DURATION_MAX_MS, description }) as const

/** The two timeouts of every request a target sends over HTTP. */
export const httpTimeouts = {
  timeout_ms: durationMs('Total time for one request, headers and body, in milliseconds. Default 10000.'),
  connect_timeout_ms: durationMs('Time to establish the connection, in milliseconds. Default 3000.'),
} as const
