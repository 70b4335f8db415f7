/**
 * The built CLI checks interlock.toml with a validator the build compiled
 * ahead of time (scripts/copy-assets.mjs); the source compiles the schema at
 * start-up (src/core/config/validate.ts). Both must find the same problems,
 * worded the same, in every document: a stale or differently compiled copy
 * would tell users something else than the tests see.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { Ajv, type ValidateFunction } from 'ajv'
import { parse } from 'smol-toml'
import { beforeAll, describe, expect, it } from 'vitest'
import { inject } from 'vitest'
import { configSchema } from '../../src/core/config/schema.js'
import { AJV_OPTIONS, CUSTOM_KEYWORDS } from '../../src/core/config/validator-options.js'
import { assertCliBuilt } from '../helpers/cli.js'

const example = parse(readFileSync(join(import.meta.dirname, '../../interlock.toml.example'), 'utf8'))

/** The right documents; every other is wrong in its own way. */
const VALID = new Set(['interlock.toml.example', 'empty (every default)'])

const DOCUMENTS: Record<string, unknown> = {
  'interlock.toml.example': example,
  'empty (every default)': {},
  'an unknown top-level key': { stor: { kind: 'sqlite' } },
  'a postgres store without url': { store: { kind: 'postgres' } },
  'a url of the wrong scheme': { store: { kind: 'postgres', url: 'mysql://x' } },
  'an http target without tier': { targets: { pay: { type: 'http', url: 'https://x.example' } } },
  'a tier-2 http target without query_url': { targets: { pay: { type: 'http', tier: 2, url: 'https://x.example' } } },
  'a bad target name and type': { targets: { 'bad name': { type: 'ftp' } } },
  'a status list of the wrong kind': { targets: { pay: { type: 'http', tier: 1, url: 'https://x.example', committed: ['2x', 99] } } },
  'a gate setting out of range': { gate: { max_attempts: 0, backoff_ms: -1 } },
}

describe('the built config validator', () => {
  let built: ValidateFunction
  let fromSource: ValidateFunction

  beforeAll(() => {
    assertCliBuilt()
    built = createRequire(import.meta.url)(join(inject('cliRoot'), 'dist/core/config/config-validator.cjs')) as ValidateFunction
    const ajv = new Ajv(AJV_OPTIONS)
    for (const k of CUSTOM_KEYWORDS) ajv.addKeyword(k)
    fromSource = ajv.compile(configSchema)
  })

  for (const [name, doc] of Object.entries(DOCUMENTS)) {
    it(`${name}: the same verdict and the same errors as the schema compiled from source`, () => {
      const ok = fromSource(doc)
      const strip = (errors: ValidateFunction['errors']) => (errors ?? []).map(({ instancePath, schemaPath, keyword, params, message }) => ({ instancePath, schemaPath, keyword, params, message }))
      const expected = strip(fromSource.errors)
      expect(built(doc)).toBe(ok)
      expect(strip(built.errors)).toEqual(expected)
      // Each case is what it says it is: a wrong document found wrong, a right one right.
      expect(ok).toBe(VALID.has(name))
    })
  }
})
