/**
 * JSON Schema of the vendor-API targets (stripe, sendgrid, slack), part of
 * schema.ts's target schema. Their tier is the service's, not a setting.
 *
 * Credentials must be `${VAR}` references: the loader records what a
 * reference expands to as a secret and scrubs it from all output, while a key
 * written into the file would be printed by `config show` like any value.
 */

import { durationMs } from './schema-common.js'
import { httpTimeouts } from './schema-common.js'

const credential = (description: string) =>
  ({
    type: 'string',
    pattern: '^\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}$',
    patternErrorMessage: 'must be a ${VAR} reference: keep the credential in the environment, not in this file',
    description,
  }) as const

const common = (service: string, defaultUrl: string) =>
  ({
    base_url: {
      type: 'string',
      pattern: '^(https?://|\\$\\{)',
      patternErrorMessage: 'must be an http:// or https:// URL, or start with a ${VAR} reference',
      description: `Base URL of the ${service} API; point it at an emulator in tests. Default "${defaultUrl}".`,
    },
    ...httpTimeouts,
  }) as const

export const stripeTarget = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'api_key'],
  properties: {
    type: { const: 'stripe', description: 'Stripe refunds (tier 1: Stripe deduplicates by the effect id as Idempotency-Key).' },
    api_key: credential('Stripe secret or restricted key allowed to read charges and create refunds, e.g. "${STRIPE_API_KEY}".'),
    ...common('Stripe', 'https://api.stripe.com'),
  },
} as const

export const sendgridTarget = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'api_key'],
  properties: {
    type: { const: 'sendgrid', description: 'SendGrid mail send (tier 3: a send in flight at a crash becomes AMBIGUOUS).' },
    api_key: credential('SendGrid API key with the mail.send scope, e.g. "${SENDGRID_API_KEY}".'),
    ...common('SendGrid', 'https://api.sendgrid.com'),
  },
} as const

export const slackTarget = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'token'],
  properties: {
    type: { const: 'slack', description: 'Slack messages (tier 3: a post in flight at a crash becomes AMBIGUOUS; compensated by chat.delete).' },
    token: credential('Slack bot token (xoxb-...) with chat:write, e.g. "${SLACK_TOKEN}".'),
    ...common('Slack Web', 'https://slack.com'),
  },
} as const

/** A signed JSON webhook (tier 1: the effect id as Idempotency-Key); where notices can go (docs/operators.md, "Being told"). */
export const webhookTarget = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'url', 'secret'],
  properties: {
    type: { const: 'webhook', description: 'A webhook: POST of the effect\'s args as JSON, signed (Interlock-Signature: t=<unix>,v1=<HMAC-SHA256 of "<t>.<body>">), Idempotency-Key: <effect id> (tier 1: the receiver must answer a repeated key without acting again).' },
    url: { type: 'string', pattern: '^https?://', description: 'Where the POST goes.' },
    secret: credential('The shared secret the body is signed with, e.g. "${HOOK_SECRET}".'),
    headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'More request headers (their values are kept out of errors and receipts).' },
    timeout_ms: durationMs('Total time for one request, in milliseconds. Default 10000.'),
    connect_timeout_ms: durationMs('Time to establish the connection, in milliseconds. Default 3000.'),
  },
} as const
