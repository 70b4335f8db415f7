/**
 * JSON Schema of [[operators]] and [policy] (see schema.ts for the rules
 * every section follows: descriptions everywhere, no unknown keys).
 *
 * Cross-key checks the schema cannot express (unique names, a quorum no
 * larger than the operators trusted, a public key that decodes) are made by
 * config/policy.ts after validation.
 */

const DECIMAL = '^-?[0-9]+(\\.[0-9]+)?$'
const decimal = (description: string) =>
  ({ type: 'string', pattern: DECIMAL, patternErrorMessage: 'must be a decimal number written as a string, e.g. "500.00"', description }) as const

export const DURATION = '^[1-9][0-9]*(ms|s|m|h|d)$'

const name = (description: string) =>
  ({
    type: 'string',
    pattern: '^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$',
    patternErrorMessage: 'must be 1-100 letters, digits or ._@- starting with a letter or digit',
    description,
  }) as const

const operator = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'public_key'],
  properties: {
    name: name('The operator, as they sign (`interlock operator keygen --name`).'),
    public_key: {
      type: 'string',
      pattern: '^ed25519:[A-Za-z0-9_-]{43}$',
      patternErrorMessage: 'must be "ed25519:" followed by 43 base64url characters, as printed by `interlock operator keygen`',
      description: 'The operator\'s ed25519 public key, "ed25519:<base64url>", as printed by `interlock operator keygen`.',
    },
  },
} as const

const condition = {
  type: 'object',
  additionalProperties: false,
  required: ['arg'],
  properties: {
    arg: {
      type: 'string',
      pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$',
      patternErrorMessage: 'must be an args key, or a dotted path into nested args ("refund.amount")',
      description: 'The effect argument compared, e.g. "amount"; a dotted path reaches into nested objects.',
    },
    above: decimal('Holds when the argument is greater than this decimal, e.g. "500.00".'),
    at_least: decimal('Holds when the argument is greater than or equal to this decimal.'),
    below: decimal('Holds when the argument is less than this decimal.'),
    at_most: decimal('Holds when the argument is less than or equal to this decimal.'),
    currency: {
      type: 'string',
      pattern: '^[A-Za-z]{3}$',
      patternErrorMessage: 'must be a three-letter currency code, e.g. "USD"',
      description: 'The comparison applies only to effects whose args.currency is this code (case-insensitive); other currencies are not held by it.',
    },
  },
} as const

const rule = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: name('The rule, recorded in the journal with every effect it holds.'),
    target: { type: 'string', minLength: 1, description: 'Only effects on this target. Default: any target.' },
    action: { type: 'string', minLength: 1, description: 'Only effects with this action. Default: any action.' },
    tier: { enum: [1, 2, 3], description: 'Only effects on targets of this tier. Default: any tier.' },
    principal: {
      type: 'string',
      minLength: 1,
      maxLength: 300,
      description:
        'Only effects asked for by this principal, as `interlock mcp-proxy` names its callers: "user:<login>" (stdio: the OS user), "token:<name>" (a static bearer token), "oauth:<issuer>#<subject>" (an OAuth access token). A trailing * matches every principal that starts with what precedes it, e.g. "token:*". An effect that names no principal (submitted through the library or `outbox submit`) matches no rule that names one. Default: any principal.',
    },
    when: {
      type: 'array',
      items: condition,
      description:
        'Conditions on the effect\'s arguments, all of which must hold, compared as exact decimals. An argument that is missing or not a decimal holds the effect (fail safe), with the reason. No conditions: every matching effect is held.',
    },
    quorum: {
      type: 'integer',
      minimum: 1,
      maximum: 100,
      description: 'How many distinct trusted operators must sign a release. Default 1.',
    },
    release_ttl: {
      type: 'string',
      pattern: DURATION,
      patternErrorMessage: 'must be a whole number followed by ms, s, m, h or d, e.g. "1h"',
      description: 'How long a signed release stays valid: a number and a unit (ms, s, m, h, d), e.g. "15m". Default "1h".',
    },
  },
} as const

export const operators = {
  type: 'array',
  description: 'Operators trusted to release, deny and resolve effects, as [[operators]] tables.',
  items: operator,
} as const

export const policy = {
  type: 'object',
  additionalProperties: false,
  description: 'Which effects wait for operators before dispatch.',
  properties: {
    rules: {
      type: 'array',
      description:
        'Rules as [[policy.rules]] tables. An effect matching several is held by the one with the largest quorum (the first such in the file).',
      items: rule,
    },
  },
} as const
