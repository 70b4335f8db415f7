/**
 * The tier each upstream tool gets, and why (`interlock check` prints both).
 *
 * Declared under [targets.<name>.tools.<tool>]: that tier. Otherwise from the
 * tool's MCP annotations, which are hints the server gives about itself
 * (modelcontextprotocol.io/specification/2025-06-18/schema#toolannotations:
 * `readOnlyHint` "the tool does not modify its environment", default false;
 * `idempotentHint` "calling the tool repeatedly with the same arguments will
 * have no additional effect", default false, meaningful only when not
 * read-only). The spec warns clients never to base decisions on annotations
 * from untrusted servers, which is why a declaration always wins and the
 * default for a tool that says nothing is the safest one, tier 3: after a
 * crash in flight it is AMBIGUOUS, never sent again on a guess.
 */
import type { McpToolConfig } from '../../config/types.js'
import type { Tier } from '../../effect.js'

export type ToolTier = Tier | 'read'

/** What the server says about a tool (its `tools/list` entry), as far as the target needs it. */
export interface ToolListing {
  name: string
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean; destructiveHint?: boolean }
  /** The JSON Schema its results' structuredContent conforms to, when it declares one. */
  outputSchema?: object
}

export interface TierDecision {
  tool: string
  tier: ToolTier
  /** Why, in words: the declaration, or the annotation that decided. */
  why: string
  declared: boolean
}

export function decideTier(tool: string, declared: McpToolConfig | undefined, listing: ToolListing | undefined): TierDecision {
  if (declared) return { tool, tier: declared.tier, why: 'declared in interlock.toml', declared: true }
  const a = listing?.annotations
  if (a?.readOnlyHint === true) return { tool, tier: 'read', why: 'annotations: readOnlyHint', declared: false }
  if (a?.idempotentHint === true) return { tool, tier: 1, why: 'annotations: idempotentHint (sent again after a crash in flight)', declared: false }
  const said = a === undefined ? 'no annotations' : 'annotations: neither readOnlyHint nor idempotentHint'
  return { tool, tier: 3, why: `${said} (a crash in flight becomes AMBIGUOUS)`, declared: false }
}

export function tierText(tier: ToolTier): string {
  return tier === 'read' ? 'read (forwarded, not journaled)' : `tier ${tier}`
}
