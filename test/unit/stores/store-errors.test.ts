/** Driver errors sorted into what the gate must know: unavailable (dispatch nothing, retry) or a plain store error. */
import { describe, expect, it } from 'vitest'
import { IntegrityError, StoreError, StoreUnavailableError } from '../../../src/core/errors.js'
import { isTransientPgError, pgError } from '../../../src/core/stores/postgres/errors.js'
import { quoteSchema, withSchema } from '../../../src/core/stores/postgres/identifier.js'
import { describePostgres } from '../../../src/core/stores/postgres/connect.js'
import { sqliteError } from '../../../src/core/stores/sqlite/errors.js'

const pgErr = (code: string, message = 'boom') => Object.assign(new Error(message), { code })

describe('PostgreSQL errors by SQLSTATE class', () => {
  it.each([
    ['08006', 'connection_failure'],
    ['08001', 'sqlclient_unable_to_establish_sqlconnection'],
    ['57P01', 'admin_shutdown'],
    ['57P03', 'cannot_connect_now'],
    ['53300', 'too_many_connections'],
    ['53100', 'disk_full'],
    ['58030', 'io_error'],
    ['40001', 'serialization_failure'],
    ['40P01', 'deadlock_detected'],
    ['57014', 'query_canceled'],
  ])('%s (%s) is transient: StoreUnavailableError', (code) => {
    expect(isTransientPgError(pgErr(code))).toBe(true)
    expect(pgError(pgErr(code), 'an append', 'db')).toBeInstanceOf(StoreUnavailableError)
  })

  it.each([
    ['23505', 'unique_violation'],
    ['42P01', 'undefined_table'],
    ['42501', 'insufficient_privilege'],
    ['28P01', 'invalid_password'],
  ])('%s (%s) is not: StoreError with its cause', (code) => {
    const err = pgError(pgErr(code), 'an append', 'db')
    expect(isTransientPgError(pgErr(code))).toBe(false)
    expect(err).toBeInstanceOf(StoreError)
    expect(err).not.toBeInstanceOf(StoreUnavailableError)
    expect(err.cause).toBeInstanceOf(Error)
    expect(err.message).toBe(`an append on db failed: boom (${code})`)
  })

  it.each(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND'])('socket error %s is transient', (code) => {
    expect(isTransientPgError(pgErr(code))).toBe(true)
  })

  it.each(['Connection terminated unexpectedly', 'timeout exceeded when trying to connect'])('driver message %j is transient', (m) => {
    expect(isTransientPgError(new Error(m))).toBe(true)
  })

  it('anything after COMMIT was sent is unavailable: the write is unconfirmed', () => {
    const err = pgError(pgErr('23505'), 'an append', 'db', true)
    expect(err).toBeInstanceOf(StoreUnavailableError)
    expect(err.hint).toMatch(/not confirmed/)
  })

  it('Interlock errors pass through unchanged', () => {
    const own = new IntegrityError('x')
    expect(pgError(own, 'a', 'b')).toBe(own)
  })
})

describe('SQLite errors', () => {
  it.each(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_IOERR_FSYNC', 'SQLITE_FULL', 'SQLITE_READONLY'])('%s is unavailable', (code) => {
    const err = sqliteError(pgErr(code), 'an append', '/j.db')
    expect(err).toBeInstanceOf(StoreUnavailableError)
    expect(err.message).toContain('/j.db')
  })

  it.each(['SQLITE_CONSTRAINT_PRIMARYKEY', 'SQLITE_ERROR'])('%s is a StoreError', (code) => {
    const err = sqliteError(pgErr(code), 'an append', '/j.db')
    expect(err).toBeInstanceOf(StoreError)
    expect(err).not.toBeInstanceOf(StoreUnavailableError)
  })

  // A damaged file is damage to the journal, reported as such (exit 5), naming the file.
  it.each(['SQLITE_CORRUPT', 'SQLITE_CORRUPT_INDEX', 'SQLITE_NOTADB'])('%s is an IntegrityError', (code) => {
    const err = sqliteError(pgErr(code), 'an append', '/j.db')
    expect(err).toBeInstanceOf(IntegrityError)
    expect(err.message).toContain('/j.db')
  })
})

describe('PostgreSQL identifiers and locations', () => {
  it('substitutes the quoted schema for every placeholder', () => {
    expect(withSchema('CREATE TABLE :"schema".a (); CREATE INDEX i ON :"schema".a (x);', 'ops')).toBe('CREATE TABLE "ops".a (); CREATE INDEX i ON "ops".a (x);')
    expect(quoteSchema('_x9')).toBe('"_x9"')
    expect(() => quoteSchema('Ops')).toThrow(/not a valid schema name/)
  })

  it('names a database without its credentials', () => {
    expect(describePostgres('postgres://app:s3cret@db.example:6543/orders?sslmode=require', 'interlock')).toBe(
      'PostgreSQL schema "interlock" in database orders on db.example:6543',
    )
    expect(describePostgres('not a url', 'x')).toBe('PostgreSQL schema "x"')
  })
})
