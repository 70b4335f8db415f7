/**
 * Loads a `type = "module"` target's code and checks its settings, for every
 * command alike (config/load.ts at load, targets/registry.ts when the target
 * is made). Each failure is a ConfigError (exit 3) whose problem names the
 * key path and the module's file: the module cannot be found, throws while
 * loading, exports no definition, or its settings break its own schema.
 *
 * Loaded synchronously (require of an ES module, Node 22.12 and later), so
 * that making targets stays synchronous everywhere it already is; a module
 * with top-level await is refused with that reason.
 */
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { redact } from '../../config/redact.js'
import { settingsProblems } from '../../config/validate.js'
import { ConfigError } from '../../errors.js'
import { definitionProblem, TARGET_DEFINITION, type TargetDefinition } from './define-target.js'

export interface LoadedTargetModule {
  /** The file the specifier resolved to. */
  file: string
  definition: TargetDefinition
}

const HINT = 'A target module exports defineTarget({ settings, create }) as its default export (docs/targets.md, "Your own code: target modules").'

/** The module, or the problems that keep it from loading, each at `targets.<name>.module`. */
export function loadTargetModule(name: string, specifier: string, dir: string, secrets: readonly string[]): LoadedTargetModule | { problems: string[] } {
  const at = `targets.${name}.module`
  const require = createRequire(join(dir, 'interlock.toml'))
  let file: string
  try {
    file = require.resolve(specifier)
  } catch {
    const where = specifier.startsWith('.') || specifier.startsWith('/') ? ` (looked for ${join(dir, specifier)})` : ` (looked in node_modules from ${dir})`
    return { problems: [`${at}: ${specifier} not found${where}`] }
  }
  let exported: unknown
  try {
    exported = require(file)
  } catch (e) {
    return { problems: [`${at}: ${specifier} ${loadFailure(e, file, secrets)}`] }
  }
  const definition = definitionOf(exported)
  const problem = definitionProblem(definition)
  if (problem) return { problems: [`${at}: ${specifier} does not export a target definition: ${problem}`] }
  return { file, definition: definition as TargetDefinition }
}

/** The same, throwing the problems as one ConfigError. */
export function requireTargetModule(name: string, specifier: string, dir: string, secrets: readonly string[]): LoadedTargetModule {
  const loaded = loadTargetModule(name, specifier, dir, secrets)
  if ('problems' in loaded) throw moduleError(name, loaded.problems)
  return loaded
}

/** The settings' problems against the module's own schema, at their TOML key paths. */
export function moduleSettingsProblems(name: string, loaded: LoadedTargetModule, settings: Record<string, unknown>, secrets: readonly string[]): string[] {
  const schema = loaded.definition.settings
  if (!schema) return []
  return settingsProblems(schema, settings, ['targets', name]).map((p) => redact(p, secrets))
}

export function moduleError(name: string, problems: string[]): ConfigError {
  return new ConfigError(`target ${name}: its module cannot be used: ${problems.length === 1 ? problems[0] : `${problems.length} problems`}`, problems, { hint: HINT, context: { target: name } })
}

/** A definition: the default export (ES module), or module.exports itself (CommonJS, or named create/settings exports). */
function definitionOf(exported: unknown): unknown {
  if (exported === null || typeof exported !== 'object') return exported
  const ns = exported as { default?: unknown; create?: unknown; [TARGET_DEFINITION]?: unknown }
  if (ns[TARGET_DEFINITION] || typeof ns.create === 'function') return ns
  return ns.default
}

function loadFailure(e: unknown, file: string, secrets: readonly string[]): string {
  const code = (e as { code?: unknown } | null)?.code
  if (code === 'ERR_REQUIRE_ASYNC_MODULE') return 'uses top-level await, which a target module cannot (it is loaded synchronously): move that work into create() or the first call'
  if (code === 'ERR_REQUIRE_ESM') return `is an ES module, which this Node.js (${process.version}) cannot load synchronously: run Node.js 22.12 or later, or write the module as CommonJS`
  const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e)
  // Where in the module it threw, when its own code did: the line a user fixes.
  const line = e instanceof Error ? e.stack?.split('\n').find((l) => l.includes(file))?.trim() : undefined
  return redact(`threw while loading: ${message.split('\n')[0]}${line ? ` (${line.replace(/^at\s+/, 'at ')})` : ''}`, secrets)
}
