/** `[notary]` in interlock.toml: the log in SQLite (path) or PostgreSQL (url, schema), one or the other. */
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { ConfigError } from '../../src/core/errors.js'

const FILE = '/srv/notary/interlock.toml'

describe('[notary] config: its store', () => {
  it('without url: SQLite at path, no PostgreSQL', () => {
    const notary = parseConfig('[notary]\npath = "n.db"\n', { file: FILE }).notary!
    expect(notary.path).toBe('/srv/notary/n.db')
    expect(notary.postgres).toBeUndefined()
  })

  it('url (a ${VAR} reference) keeps the log in PostgreSQL, in schema "interlock_notary" unless schema says otherwise', () => {
    const env = { NOTARY_DATABASE_URL: 'postgres://svc:pw@db.example:5432/payments' }
    expect(parseConfig('[notary]\nurl = "${NOTARY_DATABASE_URL}"\n', { file: FILE, env }).notary!.postgres).toEqual({ url: env.NOTARY_DATABASE_URL, schema: 'interlock_notary' })
    expect(parseConfig('[notary]\nurl = "${NOTARY_DATABASE_URL}"\nschema = "payments_notary"\n', { file: FILE, env }).notary!.postgres).toEqual({ url: env.NOTARY_DATABASE_URL, schema: 'payments_notary' })
  })

  it('refuses path and url together, a url that is not PostgreSQL, and a schema that is not a plain lowercase name', () => {
    for (const text of ['[notary]\npath = "n.db"\nurl = "postgres://h/db"\n', '[notary]\nurl = "mysql://h/db"\n', '[notary]\nurl = "postgres://h/db"\nschema = "Bad-Name"\n']) {
      expect(() => parseConfig(text, { file: FILE }), text).toThrow(ConfigError)
    }
  })
})
