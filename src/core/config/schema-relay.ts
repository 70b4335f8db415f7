import { DURATION_MAX_MS } from './schema-common.js'
import { DURATION } from './schema-policy.js'

/** JSON Schema of `[relay]`: how `interlock relay` drains the outbox (see schema.ts for the conventions). */
export const relay = {
  type: 'object',
  additionalProperties: false,
  description: 'How `interlock relay` drains the outbox. Command-line flags override these keys.',
  properties: {
    id: {
      type: 'string',
      pattern: '^[A-Za-z0-9][A-Za-z0-9._:@-]{0,99}$',
      patternErrorMessage: 'must be 1-100 letters, digits or ._:@- starting with a letter or digit',
      description: 'Names this relay in leases, heartbeats, signed records and receipts (verify trusts the [relay] key under it); unique per running relay. Default "<host>-<pid>".',
    },
    key: {
      type: 'string',
      minLength: 1,
      description:
        'The relay\'s private key file (from `interlock relay keygen`), which signs every journal record the relay (and reconcile-effects) writes and every COMMITTED receipt; mode 0600. Its public half is what `outbox verify` checks them against. Relative to this file\'s folder.',
    },
    concurrency: {
      type: 'integer',
      minimum: 1,
      maximum: 10_000,
      description: 'Most effects in flight per target at once. Default 32.',
    },
    lease_ms: {
      type: 'integer',
      minimum: 100,
      maximum: 3_600_000,
      description:
        'How long a claim holds an effect without renewal, in milliseconds; renewed every third of it while work runs. A relay stopped for longer loses the effect to another relay. Default 30000.',
    },
    poll_ms: {
      type: 'integer',
      minimum: 1,
      maximum: 600_000,
      description: 'Longest wait between claims when no notification arrives, in milliseconds. Default 1000.',
    },
    health_port: {
      type: 'integer',
      minimum: 0,
      maximum: 65_535,
      description: 'Serve /healthz and Prometheus /metrics on this port of 127.0.0.1 (0: any free port). Default: not served.',
    },
    log_format: {
      enum: ['text', 'json'],
      description:
        'How the relay logs to stderr: "text" (default), a line for people; "json", one JSON object per line (time, level, event, relay, effectId, target, state, outcome, reason, msg) for journald and log shippers.',
    },
    stall_ms: {
      type: 'integer',
      minimum: 100,
      maximum: DURATION_MAX_MS,
      description:
        '/healthz answers 503 when the relay has work and has made no progress (nothing claimed, finished or tried) for this long, or a store call has been pending this long, in milliseconds. Default 20000.',
    },
    heartbeat_retention: {
      type: 'string',
      pattern: DURATION,
      patternErrorMessage: 'must be a whole number followed by ms, s, m, h or d, e.g. "7d"',
      description:
        'How long the row of a relay that stopped sending heartbeats stays in the relays table (`outbox status` lists it as stopped or gone meanwhile); running relays delete older ones. A number and a unit (ms, s, m, h, d). Default "7d".',
    },
  },
} as const
