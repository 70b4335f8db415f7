/**
 * Effect args → statement parameters. Two actions:
 * - `insert`: every key named in `columns` or `premise_params` is required,
 *   and no other key is accepted (a stray key is most likely a misspelt
 *   column, which would otherwise be dropped without a word);
 * - `compensate`: exactly the names in `compensate_params`.
 *
 * Values go to PostgreSQL as text and the server casts them to the column's
 * type, so "12.50" reaches a NUMERIC exactly. Objects and arrays are sent as
 * canonical JSON, for json/jsonb columns.
 */
import { canonicalJson, type JsonObject, type JsonValue } from '../../canonical-json.js'
import { InputError } from '../../errors.js'
import { assertUtf8Text } from '../utf8-text.js'
import { EFFECT_ID_PARAM, type RowPlan } from './settings.js'

export const ROW_ACTIONS = ['insert', 'compensate'] as const
export type RowAction = (typeof ROW_ACTIONS)[number]

export function parseRowAction(target: string, action: string): RowAction {
  if ((ROW_ACTIONS as readonly string[]).includes(action)) return action as RowAction
  throw new InputError(`target ${target}: unknown action ${JSON.stringify(action)}; a postgres_row target knows "insert" and "compensate"`)
}

/** Refuses args that do not fit the action, naming the first bad key; nothing is sent. */
export function checkArgs(target: string, plan: RowPlan, action: RowAction, args: JsonObject): void {
  if (action === 'compensate' && !plan.compensate) {
    throw new InputError(`target ${target}: cannot compensate: no compensate_sql is configured`)
  }
  const required = action === 'insert' ? plan.allowedArgs : new Set(plan.compensate!.params)
  for (const name of [...required].sort()) {
    if (!Object.hasOwn(args, name)) throw new InputError(`args.${name} is missing (target ${target}, action ${action}: ${roleOf(plan, action, name)})`)
  }
  for (const name of Object.keys(args).sort()) {
    // A text parameter goes to PostgreSQL as UTF-8: a string without UTF-8 bytes is refused, not altered.
    const v = args[name]
    if (typeof v === 'string') assertUtf8Text(v, `args.${name} (target ${target})`)
    if (!required.has(name)) {
      throw new InputError(
        `args.${name} is not used by target ${target} (action ${action} takes ${[...required].sort().join(', ') || 'no args'})`,
        { hint: action === 'insert' ? `Map it to a column under [targets.${target}.columns], or leave it out.` : undefined },
      )
    }
  }
}

/** $1 = effect id, then the mapped columns in plan order. */
export function insertParams(plan: RowPlan, effectId: string, args: JsonObject): (string | null)[] {
  return [effectId, ...plan.columns.map(([arg]) => toParam(args[arg]!))]
}

export function namedParams(names: readonly string[], args: JsonObject): (string | null)[] {
  return names.map((n) => toParam(args[n]!))
}

/** The compensation's args: each compensate param from the compensated effect's id or its args. */
export function compensationArgs(target: string, names: readonly string[], effectId: string, args: JsonObject): JsonObject {
  const out: JsonObject = {}
  for (const name of names) {
    if (name === EFFECT_ID_PARAM) out[name] = effectId
    else if (Object.hasOwn(args, name)) out[name] = args[name]!
    else throw new InputError(`target ${target}: cannot compensate: the effect has no args.${name} for compensate_params`)
  }
  return out
}

function toParam(v: JsonValue): string | null {
  if (v === null) return null
  if (typeof v === 'string') return v
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  return canonicalJson(v)
}

function roleOf(plan: RowPlan, action: RowAction, name: string): string {
  if (action === 'compensate') return `it is one of compensate_params`
  const column = plan.columns.find(([arg]) => arg === name)?.[1]
  return column ? `it fills column ${column}` : `premise_sql reads it`
}
