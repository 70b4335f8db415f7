/**
 * Who may call which tool through the proxy: the mcp target's `allow` and
 * `deny` lists, and each declared tool's (interlock.toml, core/config/
 * schema-mcp.ts). A call of a principal they keep out is refused before
 * anything else happens to it: nothing journaled, nothing sent, no read
 * remembered. The refusal is a tool error, as every refusal of the proxy is
 * (answers.ts), naming the principal and the key that refused it; it names
 * no one else.
 */
import type { McpTargetConfig } from '../../core/config/types.js'
import { matchingPattern } from '../../core/principal-pattern.js'
import type { Principal } from './principal.js'

/** Why `principal` may not call `tool`, or undefined when it may. */
export function accessRefusal(target: string, config: McpTargetConfig, tool: string, principal: Principal): string | undefined {
  const lists: { key: string; allow?: readonly string[]; deny?: readonly string[] }[] = [
    { key: `targets.${target}`, allow: config.allow, deny: config.deny },
    { key: `targets.${target}.tools.${tool}`, allow: config.tools[tool]?.allow, deny: config.tools[tool]?.deny },
  ]
  // Every deny before any allow: a principal denied anywhere is denied.
  for (const l of lists) {
    const denied = l.deny && matchingPattern(l.deny, principal.id)
    if (denied !== undefined) return `${principal.id} may not call ${tool}: ${l.key}.deny lists ${JSON.stringify(denied)}`
  }
  for (const l of lists) {
    if (l.allow && matchingPattern(l.allow, principal.id) === undefined) return `${principal.id} may not call ${tool}: ${l.key}.allow does not list it`
  }
  return undefined
}
