/**
 * The schema name is the one identifier Interlock puts into SQL text (values
 * always go as parameters). It is checked against a strict pattern, then
 * double-quoted, so no configured name can change the meaning of a statement.
 */
import { ConfigError } from '../../errors.js'

/**
 * Every identifier Interlock writes into SQL (the store's schema, a
 * postgres_row target's table and columns): lowercase only, so quoting never
 * changes which object a name means (unquoted `Orders` is `orders`).
 */
export const SQL_IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/

/** `"name"`, for a name the caller has already checked against SQL_IDENTIFIER (and worded its own error for). */
export function quoteIdentifier(name: string): string {
  if (!SQL_IDENTIFIER.test(name)) throw new Error(`not a checked SQL identifier: ${JSON.stringify(name)}`)
  return `"${name}"`
}

/** Validated and quoted, ready to paste into SQL: `"interlock"`. */
export function quoteSchema(name: string): string {
  if (!SQL_IDENTIFIER.test(name)) {
    throw new ConfigError(`store.schema ${JSON.stringify(name)} is not a valid schema name`, [
      `store.schema: must be 1-63 lowercase letters, digits or _, starting with a letter or _ (got ${JSON.stringify(name)})`,
    ], { hint: 'Use a plain lowercase name such as "interlock".' })
  }
  return `"${name}"`
}

/** Replaces the migrations' schema placeholder (psql's `:"schema"`) with the quoted name. */
export function withSchema(sql: string, name: string): string {
  return sql.replaceAll(':"schema"', quoteSchema(name))
}
