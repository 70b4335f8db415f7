/**
 * A target module: your own code for an API Interlock has no type for, used
 * by every command the way a built-in target is (`type = "module"` in
 * interlock.toml, loaded by targets/module/load.ts).
 *
 *   // targets/crm.js
 *   import { defineTarget, DispatchFault } from 'agent-interlock'
 *   export default defineTarget({
 *     settings: { type: 'object', required: ['base_url'], properties: { base_url: { type: 'string' } } },
 *     create: (settings, ctx) => ({ name: ctx.name, tier: 2, apply, query, validatePremises }),
 *   })
 *
 * `create` is synchronous on purpose: every command makes its targets before
 * it does anything else, and a target that must open a connection or read a
 * catalogue does so at its first call (as the built-in postgres_row target
 * does). The module itself is loaded the same way, so it may not use
 * top-level await.
 */
import type { EffectTarget } from '../target.js'
import { InputError } from '../../errors.js'

/** What `create` is told besides its settings. */
export interface TargetModuleContext {
  /** The target's name in interlock.toml: the target `create` returns must carry it. */
  readonly name: string
  /** Resolved `${VAR}` values of the file: keep them out of messages and receipts. */
  readonly secrets: readonly string[]
  /** The folder of the interlock.toml the target was declared in (for relative paths in settings). */
  readonly dir: string
}

/** A JSON Schema (draft 2020-12 or 07, as ajv reads it) for the module's settings. */
export type SettingsSchema = Record<string, unknown>

export interface TargetDefinition<S = Record<string, unknown>> {
  /**
   * The keys of `[targets.<name>]` besides `type` and `module`, as written
   * (snake_case, `${VAR}` resolved). Validated with the rest of interlock.toml;
   * a problem is reported at its TOML key path. Absent: any settings are taken.
   */
  readonly settings?: SettingsSchema
  /** Make the target. Synchronous; see above. */
  create(settings: S, ctx: TargetModuleContext): EffectTarget
  /**
   * Optional: the target's actions as MCP tools, by action name, which
   * `interlock mcp-proxy --target <name>` serves to an agent host, each call
   * an effect through the gate. Without it the module serves no tools.
   */
  readonly tools?: Readonly<Record<string, ModuleTool>>
}

/** One action offered as an MCP tool (modelcontextprotocol.io/specification/2025-06-18/server/tools: Tool). */
export interface ModuleTool {
  readonly title?: string
  readonly description?: string
  /** JSON Schema of the tool's arguments, which are the effect's args (default: any object). */
  readonly inputSchema?: Record<string, unknown>
  /** MCP tool annotations shown to the host (readOnlyHint, destructiveHint, idempotentHint, ...). */
  readonly annotations?: Record<string, unknown>
}

/** Marks a definition made by defineTarget, across copies of agent-interlock (a global CLI and a project's own). */
export const TARGET_DEFINITION = Symbol.for('agent-interlock.target-definition')

/**
 * Declares a target module's export. Checks its shape at once, so a mistake
 * is reported where it was made rather than at the first effect.
 */
export function defineTarget<S = Record<string, unknown>>(definition: TargetDefinition<S>): TargetDefinition<S> {
  const problem = definitionProblem(definition)
  if (problem) throw new InputError(`defineTarget: ${problem}`)
  Object.defineProperty(definition, TARGET_DEFINITION, { value: true, enumerable: false })
  return definition
}

/** What is wrong with something offered as a target definition, or undefined. */
export function definitionProblem(definition: unknown): string | undefined {
  if (definition === null || typeof definition !== 'object') return `expected an object with create(settings, ctx), got ${describeValue(definition)}`
  const d = definition as Partial<TargetDefinition>
  if (typeof d.create !== 'function') return `create must be a function (settings, ctx) => EffectTarget, got ${describeValue(d.create)}`
  if (d.settings !== undefined && !isObject(d.settings)) return `settings must be a JSON Schema object, got ${describeValue(d.settings)}`
  if (d.tools !== undefined) {
    if (!isObject(d.tools)) return `tools must be an object of tools by action name, got ${describeValue(d.tools)}`
    for (const [action, tool] of Object.entries(d.tools)) {
      if (!/^[A-Za-z0-9_.-]{1,128}$/.test(action)) return `tools: ${JSON.stringify(action)} is not a tool name (1-128 letters, digits, _ . -)`
      if (!isObject(tool)) return `tools.${action} must be an object, got ${describeValue(tool)}`
      if (tool.inputSchema !== undefined && (!isObject(tool.inputSchema) || (tool.inputSchema as { type?: unknown }).type !== 'object')) return `tools.${action}.inputSchema must be a JSON Schema of type "object"`
    }
  }
  return undefined
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

export function describeValue(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  if (typeof v === 'function') return 'a function'
  if (typeof v === 'object') return 'an object'
  return typeof v === 'undefined' ? 'nothing' : `a ${typeof v}`
}

/** Types only: the target `create` returns, for module authors writing TypeScript. */
export type { EffectTarget }
