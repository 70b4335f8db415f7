/** JSON Schema of `[notary]`: how `interlock notary serve` runs (docs/notary.md; see schema.ts for the conventions). */
export const notaryKeys = {
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
  // One store: an SQLite file (path, the default) or PostgreSQL (url), as in [store].
  not: { required: ['path', 'url'] },
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
      description: 'The notary\'s SQLite log file. Relative to this file\'s folder. Default "interlock-notary.db". Not with url.',
    },
    url: {
      type: 'string',
      minLength: 1,
      pattern: '^(postgres(ql)?://|\\$\\{)',
      patternErrorMessage: 'must be a postgres:// or postgresql:// URL, or a ${VAR} reference',
      description:
        'Keep the notary\'s log in PostgreSQL instead of SQLite (for HA, or in the service\'s own database for the in-transaction form): connection string, usually "${NOTARY_DATABASE_URL}". Not with path.',
    },
    schema: {
      type: 'string',
      pattern: '^[a-z_][a-z0-9_]{0,62}$',
      patternErrorMessage: 'must be 1-63 lowercase letters, digits or _, starting with a letter or _',
      description: 'With url: the schema holding the notary\'s tables, created by the notary when missing. Default "interlock_notary".',
    },
    agents: {
      ...notaryKeys,
      description: 'Agents trusted to write intend and abort: name = public key of its relay key (`interlock relay keygen`).',
    },
    services: {
      ...notaryKeys,
      description: 'Services trusted to write claim, performed and failed: name = public key (`interlock notary keygen`).',
    },
  },
} as const
