/**
 * Finds, reads, parses, validates and resolves interlock.toml.
 *
 * Which file: `path` if given, else $INTERLOCK_CONFIG, else ./interlock.toml
 * in `cwd`. The environment variable comes before the working-directory file
 * so the library and the CLI (`--config`, env INTERLOCK_CONFIG) pick the same
 * file. A file that was asked for must exist; the working-directory default
 * may be absent when the caller allows it, and then the embedded default
 * (defaultConfig) applies.
 *
 * Every user-caused failure is a ConfigError (exit code 3) whose problems
 * each name a TOML key path; all problems are reported at once.
 */
import { readFileSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'
import { parse, TomlError } from 'smol-toml'
import { ConfigError } from '../errors.js'
import { defaultConfig } from './defaults.js'
import { depthProblem } from './depth.js'
import { expandEnv, type UnsetVariable } from './expand-env.js'
import { normalizeGate, normalizeNotary, normalizeReconcile, normalizeRelay, normalizeStore, normalizeTarget } from './normalize.js'
import { isNotaryRefusal, notaryTargetsHint } from './notary-targets.js'
import { normalizeNotify, notifyProblems } from './normalize-notify.js'
import { markOrigin } from './origin.js'
import { normalizeOperators, normalizePolicy } from './policy.js'
import type { InterlockConfig, TargetConfig } from './types.js'
import { unsetVariablesError, type UnsetReference } from './unset-variables.js'
import { validateConfigDocument } from './validate.js'
import { loadedHttpTemplateProblems, settleProblems } from '../targets/http/templates.js'
import { targetModuleProblems } from '../targets/module/problems.js'

export const CONFIG_FILE_NAME = 'interlock.toml'
export const CONFIG_ENV_VAR = 'INTERLOCK_CONFIG'

const HINT_FIX =
  'Fix the keys listed; every key is documented in interlock.toml.example and schemas/interlock.schema.json.'

export interface LoadConfigOptions {
  /** Config file to read (relative to `cwd`); it must exist. */
  path?: string
  /** Folder to look in and resolve `path` against. Default: process.cwd(). */
  cwd?: string
  /** Where `${VAR}` and INTERLOCK_CONFIG are looked up. Default: process.env. */
  env?: Record<string, string | undefined>
  /** With no file asked for and none in `cwd`, return defaultConfig(cwd) instead of failing. */
  allowMissing?: boolean
  /**
   * A target's `${VAR}` that is not set is left as written instead of failing
   * the load, and refused only when that target is made (targets/registry.ts):
   * for what only reads the store (`outbox status`, `config show`...), which
   * has no business with a target's credentials.
   */
  deferTargetVariables?: boolean
  /**
   * Why the caller cannot do without a file, said when there is none and the
   * embedded default is not allowed (`the relay needs one, for the targets it
   * sends effects to`).
   */
  whyNeeded?: string
}

export function loadConfig(options: LoadConfigOptions = {}): InterlockConfig {
  const cwd = resolve(options.cwd ?? process.cwd())
  const env = options.env ?? process.env
  const asked = options.path ?? nonEmpty(env[CONFIG_ENV_VAR])
  const file = resolve(cwd, asked ?? CONFIG_FILE_NAME)
  const shown = relative(cwd, file) || file

  const text = readConfigText(file, shown, asked !== undefined)
  if (text === undefined) {
    if (options.allowMissing) return defaultConfig(cwd)
    throw new ConfigError(`no ${CONFIG_FILE_NAME} in ${cwd}${options.whyNeeded ? `: ${options.whyNeeded}` : ''}`, [], {
      hint: `Write one with \`interlock init\`, or pass --config <file> (or set ${CONFIG_ENV_VAR}) to use another.`,
      context: { file },
    })
  }
  return parseConfig(text, { file, shown, env, deferTargetVariables: options.deferTargetVariables })
}

/** Parses and resolves config text as if read from `file` (which decides relative paths). */
export function parseConfig(
  text: string,
  options: { file: string; shown?: string; env?: Record<string, string | undefined>; deferTargetVariables?: boolean },
): InterlockConfig {
  const file = resolve(options.file)
  const shown = options.shown ?? file
  const doc = parseToml(text, file, shown)
  // Too deep or too long to walk: that one problem, before anything walks it recursively.
  const deep = depthProblem(doc)
  if (deep) throw invalid(shown, file, [deep])

  const schemaProblems = validateConfigDocument(doc)
  const expanded = expandEnv(doc, options.env ?? process.env)
  // A target's unset variable is then the business of whatever builds that target (a relay, check, submit).
  const deferred = options.deferTargetVariables ? expanded.unset.filter((u) => u.path[0] === 'targets' && u.path.length > 2) : []
  const deferredProblems = new Set(deferred.map((u) => u.problem))
  const problems = [...schemaProblems, ...expanded.problems.filter((p) => !deferredProblems.has(p))]
  const unset = expanded.unset.filter((u) => !deferredProblems.has(u.problem))
  // Nothing wrong with the file but the environment it is read in: say what to export.
  if (problems.length > 0 && problems.length === unset.length) throw unsetVariablesError(unset.map(reference), { file })
  if (problems.length > 0) throw invalid(shown, file, problems)

  const dir = dirname(file)
  const raw = expanded.value as Record<string, Record<string, unknown> | undefined>
  const targets: Record<string, TargetConfig> = {}
  for (const [name, target] of Object.entries((raw.targets ?? {}) as Record<string, Record<string, unknown>>)) {
    targets[name] = normalizeTarget(target, dir)
  }
  const { operators, problems: operatorProblems } = normalizeOperators(raw.operators)
  const { policy, problems: policyProblems } = normalizePolicy(raw.policy, operators.length)
  // What the schema cannot say about an http target's request templates, with the same key paths.
  const gate = normalizeGate(raw.gate)
  const templateProblems = Object.entries(targets).flatMap(([name, t]) => (t.type === 'http' ? [...loadedHttpTemplateProblems(name, t, writtenTarget(doc, name), dir), ...settleProblems(name, t, gate.maxWaitMs)] : []))
  // A target module's own settings, by its own schema: loaded here only for what makes targets (not for store-only reads).
  const moduleProblems = options.deferTargetVariables ? [] : Object.entries(targets).flatMap(([name, t]) => (t.type === 'module' ? targetModuleProblems(name, t, expanded.secrets) : []))
  const notify = normalizeNotify(raw.notify)
  const crossProblems = [...templateProblems, ...moduleProblems, ...operatorProblems, ...policyProblems, ...notifyProblems(notify, targets, policy)]
  if (crossProblems.length > 0) throw invalid(shown, file, crossProblems)
  const unresolvedOf = new Map<string, string[]>()
  for (const u of deferred) unresolvedOf.set(u.path[1]!, [...(unresolvedOf.get(u.path[1]!) ?? []), u.problem])
  for (const [name, settings] of Object.entries(targets)) {
    const unresolved = unresolvedOf.get(name)
    markOrigin(settings, { file, secrets: expanded.secrets, rules: policy.rules, ...(unresolved ? { unresolved } : {}) })
  }
  return {
    file,
    store: normalizeStore(raw.store, dir),
    gate,
    targets,
    operators,
    policy,
    notify,
    reconcile: normalizeReconcile(raw.reconcile),
    relay: normalizeRelay(raw.relay, dir),
    ...(raw.notary === undefined ? {} : { notary: normalizeNotary(raw.notary, dir) }),
    secrets: expanded.secrets,
    ...(deferred.length > 0 ? { unresolved: deferred.map((u) => u.problem) } : {}),
  }
}

function reference(u: UnsetVariable): UnsetReference {
  const target = u.path[0] === 'targets' && u.path.length > 2 ? u.path[1] : undefined
  return { name: u.name, problem: u.problem, section: u.path[0] ?? '', ...(target === undefined ? {} : { target }) }
}

function invalid(shown: string, file: string, problems: string[]): ConfigError {
  // A notary on a target that cannot take it is no typo: the hint says which targets do, and why.
  const hint = problems.some(isNotaryRefusal) ? `${notaryTargetsHint(problems)} ${HINT_FIX}` : HINT_FIX
  return new ConfigError(`${shown} is invalid: ${plural(problems.length, 'problem')}`, problems, { hint, context: { file } })
}

/** undefined when the file does not exist and was not asked for. */
function readConfigText(file: string, shown: string, asked: boolean): string | undefined {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' && !asked) return undefined
    const why = code === 'ENOENT' ? 'not found' : code === 'EISDIR' ? 'is a folder' : 'cannot be read'
    throw new ConfigError(`config file ${shown} ${why}`, [], {
      hint:
        code === 'ENOENT'
          ? `Check the path given with --config or ${CONFIG_ENV_VAR}, or write the file there with \`interlock init\` and the same --config or ${CONFIG_ENV_VAR}.`
          : 'Point --config at a readable interlock.toml file.',
      context: { file, errno: code },
      cause: error,
    })
  }
}

function parseToml(text: string, file: string, shown: string): unknown {
  try {
    return parse(text)
  } catch (error) {
    if (!(error instanceof TomlError)) throw error
    const reason = error.message.split('\n')[0]!.replace(/^Invalid TOML document:\s*/, '')
    throw new ConfigError(
      `${shown}:${error.line}:${error.column}: TOML syntax error: ${reason}`,
      [`line ${error.line}, column ${error.column}: ${reason}\n${error.codeblock}`],
      { hint: 'Fix the TOML syntax at that line; see https://toml.io for the format.', context: { file, line: error.line, column: error.column }, cause: error },
    )
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

/** A target's table as the file writes it (its ${VAR}s not filled in). */
function writtenTarget(doc: unknown, name: string): Record<string, unknown> {
  const targets = (doc as { targets?: Record<string, Record<string, unknown>> } | undefined)?.targets
  return targets?.[name] ?? {}
}
