/**
 * Validates a parsed interlock.toml against the schema and words every ajv
 * error as `<toml key path>: <what is wrong>`, all of them at once, so a user
 * fixes the file in one pass (STYLE habit 3: the message names the thing).
 */
import { Ajv, type ErrorObject } from 'ajv'
import { configSchema } from './schema.js'

let compiled: ReturnType<Ajv['compile']> | undefined

function validator(): ReturnType<Ajv['compile']> {
  if (!compiled) {
    // verbose: the problem wording needs the failing schema (allowed keys, pattern messages).
    const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, strictTypes: false, strictRequired: false })
    ajv.addKeyword({ keyword: 'patternErrorMessage', schemaType: 'string' })
    compiled = ajv.compile(configSchema)
  }
  return compiled
}

/** Problems found in `doc`, in file order as far as ajv reports it; empty when valid. */
export function validateConfigDocument(doc: unknown): string[] {
  const validate = validator()
  if (validate(doc)) return []
  const problems: string[] = []
  for (const error of validate.errors ?? []) {
    const problem = describe(error)
    if (problem !== undefined && !problems.includes(problem)) problems.push(problem)
  }
  return problems
}

/** A TOML dotted key: bare where TOML allows it, quoted otherwise. */
export function tomlKeyPath(segments: readonly string[]): string {
  return segments.map((s) => (/^[A-Za-z0-9_-]+$/.test(s) ? s : JSON.stringify(s))).join('.')
}

function segmentsOf(instancePath: string): string[] {
  if (instancePath === '') return []
  return instancePath
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
}

function at(segments: string[], message: string): string {
  return segments.length === 0 ? message : `${tomlKeyPath(segments)}: ${message}`
}

const TOML_TYPE: Record<string, string> = {
  object: 'a table',
  array: 'an array',
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
}

function oneOf(values: readonly unknown[]): string {
  const shown = values.map((v) => (typeof v === 'string' ? JSON.stringify(v) : String(v)))
  if (shown.length === 1) return shown[0]!
  return `${shown.slice(0, -1).join(', ')} or ${shown[shown.length - 1]}`
}

function describe(error: ErrorObject): string | undefined {
  const path = segmentsOf(error.instancePath)
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    // `if` only says "must match then/else"; the branch's own errors carry the detail.
    case 'if':
    case 'propertyNames':
      return undefined
    case 'additionalProperties': {
      const key = String(params.additionalProperty)
      const allowed = Object.keys((error.parentSchema as { properties?: object })?.properties ?? {})
      const guess = closest(key, allowed)
      return at([...path, key], `unknown key${guess ? ` (did you mean "${guess}"?)` : ''}`)
    }
    case 'required':
      return at([...path, String(params.missingProperty)], requiredMessage(path, String(params.missingProperty)))
    case 'type':
      return at(path, `must be ${oneOf(String(params.type).split(',').map((t) => TOML_TYPE[t] ?? t)).replace(/"/g, '')}`)
    case 'enum':
      return at(path, `must be ${oneOf(params.allowedValues as unknown[])}`)
    case 'const':
      return at(path, `must be ${oneOf([params.allowedValue])}`)
    case 'minimum':
    case 'maximum':
      return at(path, `must be ${error.keyword === 'minimum' ? 'at least' : 'at most'} ${String(params.limit)}`)
    case 'minLength':
      return at(path, 'must not be empty')
    case 'pattern': {
      const message = (error.parentSchema as { patternErrorMessage?: string })?.patternErrorMessage
      if (error.propertyName !== undefined) {
        return at([...path, error.propertyName], `invalid name: ${message ?? `must match ${String(params.pattern)}`}`)
      }
      return at(path, message ?? `must match ${String(params.pattern)}`)
    }
    case 'false schema':
      return at(path, falseSchemaMessage(path))
    default:
      return at(path, error.message ?? 'is invalid')
  }
}

function requiredMessage(parent: string[], key: string): string {
  if (parent[0] === 'targets' && key === 'query_url') {
    return 'required when tier = 2 (the gate asks it whether an effect already happened)'
  }
  return 'required key is missing'
}

function falseSchemaMessage(path: string[]): string {
  if (path[0] === 'targets' && path[path.length - 1] === 'query_url') {
    return 'only used when tier = 2; remove it, or set tier = 2 if the service can be asked'
  }
  return 'not allowed here'
}

/** The allowed key a typo most likely meant, if any is within two edits. */
function closest(key: string, allowed: string[]): string | undefined {
  let best: string | undefined
  let bestDistance = 3
  for (const candidate of allowed) {
    const d = editDistance(key, candidate)
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return best
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1))
      diagonal = above
    }
  }
  return row[b.length]!
}
