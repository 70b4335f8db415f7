/** JSON Schema of `[notary]`: how `interlock notary serve` runs (docs/notary.md; see schema.ts for the conventions). */
const KEYS = {
  type: 'object',
  propertyNames: {
    pattern: '^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$',
    patternErrorMessage: 'names use letters, digits and ._@- (at most 100 characters)',
  },
  additionalProperties: {
    type: 'string',
    pattern: '^ed25519:[A-Za-z0-9_-]{43}$',
    patternErrorMessage: 'must be "ed25519:" followed by 43 base64url characters, as printed by keygen',
  },
} as const

export const notary = {
  type: 'object',
  additionalProperties: false,
  description: 'The notary (`interlock notary serve`): a signed, hash-chained log that agents and notarized services both write to, so a tier-3 effect caught in flight is recovered by asking it (docs/notary.md).',
  properties: {
    listen: {
      type: 'string',
      pattern: '^[^\\s]+:[0-9]{1,5}$',
      patternErrorMessage: 'must be <host>:<port>, e.g. "127.0.0.1:7311"',
      description: 'Address the notary serves its HTTP API on, <host>:<port>. Default "127.0.0.1:7311".',
    },
    path: {
      type: 'string',
      minLength: 1,
      description: 'The notary\'s SQLite log file. Relative to this file\'s folder. Default "interlock-notary.db".',
    },
    agents: {
      ...KEYS,
      description: 'Agents trusted to write intend and abort: name = public key of its relay key (`interlock relay keygen`).',
    },
    services: {
      ...KEYS,
      description: 'Services trusted to write claim, performed and failed: name = public key (`interlock notary keygen`).',
    },
  },
} as const
