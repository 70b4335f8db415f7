/**
 * Makes a `type = "module"` target: its module loaded (load.ts), its settings
 * checked against the module's schema, `create` called, and what it returns
 * checked like any target. Whatever goes wrong is a ConfigError (exit 3)
 * naming the target and the module, scrubbed of the file's secrets.
 */
import type { ModuleTargetConfig } from '../../config/types.js'
import { redact } from '../../config/redact.js'
import { isInterlockError } from '../../errors.js'
import { assertTarget, type EffectTarget } from '../target.js'
import { describeValue, type ModuleTool } from './define-target.js'
import { moduleError, moduleSettingsProblems, requireTargetModule } from './load.js'

export function createModuleTarget(name: string, config: ModuleTargetConfig, secrets: readonly string[]): EffectTarget {
  const loaded = requireTargetModule(name, config.module, config.dir, secrets)
  const problems = moduleSettingsProblems(name, loaded, config.settings, secrets)
  if (problems.length > 0) throw moduleError(name, problems)
  const at = `targets.${name}: ${config.module}`
  let made: unknown
  try {
    made = loaded.definition.create(structuredClone(config.settings), { name, secrets, dir: config.dir })
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e)
    throw moduleError(name, [redact(`${at}: create() threw: ${message}`, secrets)])
  }
  if (made !== null && typeof made === 'object' && typeof (made as { then?: unknown }).then === 'function') {
    throw moduleError(name, [`${at}: create() returned a promise; it must return the target itself (open connections at the first call instead)`])
  }
  if (made === null || typeof made !== 'object') throw moduleError(name, [`${at}: create() returned ${describeValue(made)}, not a target`])
  const target = made as EffectTarget
  if (target.name !== name) {
    throw moduleError(name, [`${at}: create() returned a target named ${JSON.stringify(target.name)}; it must carry its name in interlock.toml, ${JSON.stringify(name)} (ctx.name)`])
  }
  try {
    assertTarget(target)
  } catch (e) {
    if (!isInterlockError(e)) throw e
    throw moduleError(name, [redact(`${at}: create() returned no valid target: ${e.message}`, secrets)])
  }
  if (loaded.definition.tools) toolsOf.set(target, loaded.definition.tools)
  return target
}

const toolsOf = new WeakMap<EffectTarget, Readonly<Record<string, ModuleTool>>>()

/** The MCP tools a module target's definition offers (`interlock mcp-proxy` serves them), or undefined. */
export function moduleToolsOf(target: EffectTarget): Readonly<Record<string, ModuleTool>> | undefined {
  return toolsOf.get(target)
}
