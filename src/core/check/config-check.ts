/**
 * The config step of `interlock check`: interlock.toml read and validated
 * like the loader does (config/load.ts), but every finding becomes a row
 * instead of one ConfigError, and as much as can still be checked is
 * handed on:
 * - TOML syntax or schema problems: one failing `config.schema` row per
 *   problem, each naming its key path; nothing else can be checked; so too
 *   an http target's request template that cannot work (its body not JSON,
 *   a placeholder naming no argument: targets/http/templates.ts);
 * - a `${VAR}` that is not set: a finding of whatever holds it (a target's
 *   credentials, the store's url), not of the file; the rest is checked;
 * - [[operators]] and [policy] cross-key problems: handed to the keys and
 *   policy families, which report them as their own.
 */
import { readFileSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'
import { parse } from 'smol-toml'
import { defaultConfig } from '../config/defaults.js'
import { CONFIG_ENV_VAR, CONFIG_FILE_NAME, parseConfig } from '../config/load.js'
import { loadedHttpTemplateProblems, settleProblems } from '../targets/http/templates.js'
import { expandEnv } from '../config/expand-env.js'
import { normalizeGate, normalizeStore, normalizeTarget } from '../config/normalize.js'
import { isNotaryRefusal, notaryTargetsHint } from '../config/notary-targets.js'
import { normalizeOperators, normalizePolicy } from '../config/policy.js'
import { normalizeNotify, notifyProblems } from '../config/normalize-notify.js'
import type { InterlockConfig, TargetConfig } from '../config/types.js'
import { validateConfigDocument } from '../config/validate.js'
import { ConfigError } from '../errors.js'
import { fail, pass } from './rows.js'
import type { CheckContext, CheckRow } from './types.js'

export interface ConfigStep {
  rows: CheckRow[]
  file: string | null
  /** Absent when nothing past the config can be checked. */
  context?: Omit<CheckContext, 'timeoutMs'>
}

export interface ConfigStepOptions {
  path?: string
  cwd: string
  env: Record<string, string | undefined>
}

const UNSET = /^(.*): environment variable ([A-Za-z_][A-Za-z0-9_]*) is not set$/
export const FIX_OPERATOR_KEY = 'Paste the operator\'s public key as printed by `interlock operator keygen` ("ed25519:..."); each operator needs their own.'
const FIX_SCHEMA = 'Fix the key named; every key is documented in interlock.toml.example and schemas/interlock.schema.json.'

export function checkConfig(options: ConfigStepOptions): ConfigStep {
  const asked = options.path ?? (options.env[CONFIG_ENV_VAR] || undefined)
  const file = resolve(options.cwd, asked ?? CONFIG_FILE_NAME)
  const shown = relative(options.cwd, file) || file
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `cannot be read (${(e as Error).message})`
    return {
      file: null,
      rows: [fail('config.file', 'config file found and read', `${shown} ${why}`, `Create one with \`interlock init\`, or pass --config <file> (or set ${CONFIG_ENV_VAR}).`)],
    }
  }
  const fileRow = pass('config.file', 'config file found and read', `read ${file}`)

  let doc: unknown
  try {
    doc = parse(text)
  } catch {
    // parseConfig words a syntax error with its line, column and code block.
    return { file, rows: [fileRow, ...problemRows(configProblems(text, file, options.env))] }
  }
  const schemaProblems = validateConfigDocument(doc)
  if (schemaProblems.length > 0) return { file, rows: [fileRow, ...problemRows(schemaProblems)] }

  const unset = new Map<string, string>()
  for (const p of expandEnv(doc, options.env).problems) {
    const m = UNSET.exec(p)
    if (!m) return { file, rows: [fileRow, ...problemRows([p])] }
    unset.set(m[1]!, m[2]!)
  }
  // Unset variables get a stand-in so the rest of the file can be read; whatever holds one is reported and not probed.
  const env = { ...options.env }
  for (const name of unset.values()) env[name] = `unset-${name}`
  const expanded = expandEnv(doc, env)
  const raw = expanded.value as Record<string, Record<string, unknown> | undefined>
  const dir = dirname(file)
  const targets: Record<string, TargetConfig> = {}
  for (const [name, t] of Object.entries((raw.targets ?? {}) as Record<string, Record<string, unknown>>)) targets[name] = normalizeTarget(t, dir)
  // An http target's request templates, checked as the loader checks them (targets/http/templates.ts).
  const maxWaitMs = normalizeGate(raw.gate).maxWaitMs
  const templateProblems = Object.entries(targets).flatMap(([name, t]) => (t.type === 'http' ? [...loadedHttpTemplateProblems(name, t, writtenTarget(doc, name), dir), ...settleProblems(name, t, maxWaitMs)] : []))
  if (templateProblems.length > 0) return { file, rows: [fileRow, ...problemRows(templateProblems)] }
  const { operators, problems: operatorProblems } = normalizeOperators(raw.operators)
  const { policy, problems: policyProblems } = normalizePolicy(raw.policy as Record<string, unknown> | undefined, operators.length)
  // [[notify]] rules name a channel target that can take notices, and targets and rules that exist.
  const notify = normalizeNotify(raw.notify)
  const notifyFound = notifyProblems(notify, targets, policy)
  if (notifyFound.length > 0) return { file, rows: [fileRow, ...problemRows(notifyFound)] }
  const secrets = expanded.secrets.filter((s) => ![...unset.values()].some((name) => s === `unset-${name}`))
  // Sections this step does not read itself keep the loader's defaults (defaultConfig grows with the schema).
  const config: InterlockConfig = { ...defaultConfig(dir), file, store: normalizeStore(raw.store, dir), gate: normalizeGate(raw.gate), targets, operators, policy, notify, secrets }

  const rows = [fileRow, pass('config.schema', 'interlock.toml matches the schema', describe(config))]
  for (const [path, name] of unset) {
    if (!/^(targets|store)\./.test(path)) rows.push(fail('config.env', `${path} is set`, `${path}: environment variable ${name} is not set`, `Export ${name} in the environment check runs in.`))
  }
  return { file, rows, context: { config, raw: raw as Record<string, unknown>, unset, operatorProblems, policyProblems, relayKeyEnv: options.env.INTERLOCK_RELAY_KEY || undefined } }
}

function configProblems(text: string, file: string, env: Record<string, string | undefined>): string[] {
  try {
    parseConfig(text, { file, env })
    return []
  } catch (e) {
    if (e instanceof ConfigError) return e.problems.length > 0 ? [...e.problems] : [e.message]
    throw e
  }
}

function problemRows(problems: string[]): CheckRow[] {
  return problems.map((p) => {
    const keyPath = /^([^\s:]+):/.exec(p)?.[1]
    // A malformed operator key is the keys family's finding, even when the schema is what caught it.
    if (keyPath && /^operators\.\d+\.public_key$/.test(keyPath)) return fail('keys.operators', 'operator public keys parse', p, FIX_OPERATOR_KEY)
    return fail('config.schema', keyPath ? `${keyPath} is valid` : 'interlock.toml parses', p, isNotaryRefusal(p) ? notaryTargetsHint([p]) : FIX_SCHEMA)
  })
}

function describe(config: InterlockConfig): string {
  const n = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`
  return `valid: ${config.store.kind} store, ${n(Object.keys(config.targets).length, 'target')}, ${n(config.operators.length, 'operator')}, ${n(config.policy.rules.length, 'policy rule')}`
}

/** A target's table as the file writes it (its ${VAR}s not filled in). */
function writtenTarget(doc: unknown, name: string): Record<string, unknown> {
  const targets = (doc as { targets?: Record<string, Record<string, unknown>> } | undefined)?.targets
  return targets?.[name] ?? {}
}
