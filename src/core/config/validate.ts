/**
 * Validates a parsed interlock.toml against the schema and words every ajv
 * error as `<toml key path>: <what is wrong>`, all of them at once, so a user
 * fixes the file in one pass (STYLE habit 3: the message names the thing).
 */
import type { Ajv as AjvClass, ErrorObject, ValidateFunction } from 'ajv'
import { createRequire } from 'node:module'
import { depthProblem } from './depth.js'
import { tomlKeyPath } from './key-path.js'
import { isNotaryKey, notaryRefusal } from './notary-targets.js'
import { configSchema } from './schema.js'
import { AJV_OPTIONS, CUSTOM_KEYWORDS } from './validator-options.js'
import { editDistance } from '../edit-distance.js'

export { tomlKeyPath }

let compiled: ValidateFunction | undefined

const require = createRequire(import.meta.url)

/** ajv itself, loaded only to compile: the built CLI's own validator needs only its small runtime. */
function ajv(options: ConstructorParameters<typeof AjvClass>[0]): AjvClass {
  const { Ajv } = require('ajv') as typeof import('ajv')
  return new Ajv(options)
}

/**
 * The built CLI's validator, compiled by the build (scripts/copy-assets.mjs)
 * beside this file; from source (tests, tsx) there is none, and the schema is
 * compiled here the same way.
 */
function validator(): ValidateFunction {
  if (!compiled) {
    try {
      compiled = require('./config-validator.cjs') as ValidateFunction
    } catch (e) {
      if ((e as { code?: unknown }).code !== 'MODULE_NOT_FOUND') throw e
      const compiler = ajv(AJV_OPTIONS)
      for (const k of CUSTOM_KEYWORDS) compiler.addKeyword(k)
      compiled = compiler.compile(configSchema)
    }
  }
  return compiled
}

/**
 * Problems found in `doc`, in file order as far as ajv reports it; empty when
 * valid. A document nested deeper than any interlock.toml can be is one
 * problem, found before anything walks it recursively.
 */
export function validateConfigDocument(doc: unknown): string[] {
  const deep = depthProblem(doc)
  if (deep) return [deep]
  const validate = validator()
  if (validate(doc)) return []
  // A set: the same problem reached by two schema branches is said once, in linear time for 100,000 of them.
  const problems = new Set<string>()
  for (const error of validate.errors ?? []) {
    for (const problem of describe(error)) problems.add(problem)
  }
  return [...problems]
}

const moduleValidators = new WeakMap<object, ValidateFunction | string>()

/**
 * Problems of `settings` against a JSON Schema that is not ours (a target
 * module's), worded like the file's own at key paths under `prefix`. A schema
 * that does not compile is one problem, said as such.
 */
export function settingsProblems(schema: Record<string, unknown>, settings: unknown, prefix: string[]): string[] {
  let validate = moduleValidators.get(schema)
  if (validate === undefined) {
    try {
      // Not strict: a module's schema is its author's, with whatever keywords and $schema they write.
      const compiler = ajv({ allErrors: true, verbose: true, strict: false })
      ;(require('ajv-formats') as typeof import('ajv-formats')).default(compiler)
      const { $schema: _ignored, ...rest } = schema
      validate = compiler.compile(rest)
    } catch (e) {
      validate = `the module's settings schema does not compile: ${e instanceof Error ? e.message : String(e)}`
    }
    moduleValidators.set(schema, validate)
  }
  if (typeof validate === 'string') return [at(prefix, validate)]
  if (validate(settings)) return []
  const base = prefix.map((s) => `/${s.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('')
  const problems = new Set<string>()
  for (const error of validate.errors ?? []) {
    for (const problem of describe({ ...error, instancePath: base + error.instancePath })) problems.add(problem)
  }
  return [...problems]
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

function describe(error: ErrorObject): string[] {
  const path = segmentsOf(error.instancePath)
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    // `if` only says "must match then/else"; the branch's own errors carry the detail.
    case 'if':
    case 'propertyNames':
      return []
    case 'additionalProperties': {
      const key = String(params.additionalProperty)
      // Not a typo: a key some targets take, on one that cannot (notary-targets.ts).
      if (isNotaryKey(path, key)) return [at([...path, key], notaryRefusal((error.data as { type?: unknown } | null)?.type))]
      return [unknownKey(path, key, allowedKeys(error))]
    }
    case 'required': {
      const missing = String(params.missingProperty)
      return [at([...path, missing], requiredMessage(path, missing)), ...misspelt(path, missing, error)]
    }
    default:
      return [problemOf(error, path, params)]
  }
}

function allowedKeys(error: ErrorObject): string[] {
  return Object.keys((error.parentSchema as { properties?: object })?.properties ?? {})
}

function unknownKey(path: string[], key: string, allowed: string[]): string {
  const guess = closest(key, allowed)
  return at([...path, key], `unknown key${guess ? ` (did you mean "${guess}"?)` : ''}`)
}

/**
 * A required key that is missing because it was misspelt (`typx` for `type`
 * in a target, where the other keys depend on `type` and so are not yet
 * checked as unknown): the misspelling is named by its own key path.
 */
function misspelt(path: string[], missing: string, error: ErrorObject): string[] {
  const data = error.data
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return []
  const allowed = allowedKeys(error)
  return Object.keys(data)
    .filter((key) => !allowed.includes(key) && closest(key, [missing]) === missing)
    .map((key) => unknownKey(path, key, [missing]))
}

function problemOf(error: ErrorObject, path: string[], params: Record<string, unknown>): string {
  switch (error.keyword) {
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
  if (path[0] === 'targets' && ['query_url', 'query'].includes(path[path.length - 1]!)) {
    return 'only used when tier = 2; remove it, or set tier = 2 if the service can be asked'
  }
  if (path[0] === 'targets' && ['form', 'graphql'].includes(path[path.length - 1]!)) {
    return 'give one of body, form or graphql, not several: each is a whole request body'
  }
  if (path[0] === 'targets' && path[path.length - 1] === 'notary') {
    return 'only used when tier = 3 (the notary lifts a tier-3 service to tier 2); remove it, or set tier = 3'
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
