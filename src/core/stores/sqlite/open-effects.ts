/**
 * Open and settled effects, as the SQLite schema indexes them
 * (schemas/sqlite/0001_baseline.sql): settled_at is NULL exactly while an
 * effect's state is not terminal. effects_open indexes the open ones,
 * effects_settled the state of the settled ones. SQLite reads a partial index
 * only when the query itself states the index's condition, so a query by
 * state adds the condition its states imply.
 */
import { isTerminal, type State } from '../../lifecycle.js'

/** `settled_at IS NULL` when every state asked for is open, `IS NOT NULL` when every one is settled; otherwise nothing. */
export function settledCondition(states: readonly string[]): string | undefined {
  if (states.length === 0) return undefined
  if (states.every((s) => !isTerminal(s as State))) return 'settled_at IS NULL'
  if (states.every((s) => isTerminal(s as State))) return 'settled_at IS NOT NULL'
  return undefined
}
