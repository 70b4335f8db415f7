/**
 * Premises of an MCP tool call: the reads it rests on (`rests_on`, e.g.
 * `edit_file` on `read_text_file` of the same path), each kept as the digest
 * of what the read answered when the agent decided, and read again right
 * before the call is sent (docs/design.md, "Promises" 3). A different answer
 * means the world changed under the agent's decision: REJECTED, nothing sent.
 *
 * What the agent read comes from the proxy, which keeps per caller and
 * thread what each read returned (integrations/mcp/reads.ts); a read the agent did not
 * make through it is made when the call is proposed. Only digests are
 * journaled: what a file said is not the journal's business, and a digest
 * holds no secret.
 */
import { canonicalJson, type JsonObject } from '../../canonical-json.js'
import type { McpReadConfig } from '../../config/types.js'
import type { Premises } from '../../effect.js'
import { sha256Hex } from '../../hash.js'
import { expand } from './template.js'

export interface Read {
  tool: string
  args: JsonObject
}

export interface ReadPremise extends Read {
  /** sha256 of the read's result (content, structuredContent, isError) as canonical JSON. */
  digest: string
}

/** Calls a read tool; its CallToolResult, or throws. */
export type ReadTool = (read: Read) => Promise<JsonObject>

/** What a thread already read, by the read's tool and arguments (the proxy's memory), or undefined. */
export type Remembered = (read: Read) => string | undefined | Promise<string | undefined>

/** The reads a call of a tool rests on, with its arguments filled in. */
export function readsFor(restsOn: readonly McpReadConfig[], args: JsonObject): Read[] {
  return restsOn.map((r) => ({ tool: r.tool, args: expand(r.args, { args }) as JsonObject }))
}

/** A read's result as its digest: what it said, not how it was framed (_meta is left out). */
export function readDigest(result: JsonObject): string {
  return sha256Hex(canonicalJson({ content: result.content ?? [], structuredContent: result.structuredContent ?? null, isError: result.isError === true }))
}

/** The premises of a call: each read as the agent saw it, or as it answers now. */
export async function capturePremises(reads: readonly Read[], remembered: Remembered, read: ReadTool): Promise<Premises> {
  if (reads.length === 0) return {}
  const premises: ReadPremise[] = []
  for (const r of reads) premises.push({ ...r, digest: (await remembered(r)) ?? readDigest(await read(r)) })
  return { reads: premises as unknown as JsonObject[] }
}

/** The reads whose answer changed since they were captured; [] when the world still matches. */
export async function premiseViolations(premises: Premises, read: ReadTool): Promise<string[]> {
  const reads = Array.isArray(premises.reads) ? (premises.reads as unknown as ReadPremise[]) : []
  const violations: string[] = []
  for (const p of reads) {
    let now: JsonObject
    try {
      now = await read({ tool: p.tool, args: p.args })
    } catch (e) {
      // Not a changed world, and not an answer: the check did not happen, so nothing may be sent yet.
      throw new Error(`could not read ${describe(p)} again before sending: ${(e as Error).message}`, { cause: e })
    }
    if (readDigest(now) !== p.digest) violations.push(`${describe(p)} answers differently than when the agent read it${now.isError === true ? ` (now an error: ${firstText(now)})` : ''}`)
  }
  return violations
}

export function describe(r: Read): string {
  return `${r.tool} ${canonicalJson(r.args)}`
}

function firstText(result: JsonObject): string {
  const block = Array.isArray(result.content) ? (result.content as JsonObject[]).find((c) => c?.type === 'text') : undefined
  const text = typeof block?.text === 'string' ? block.text : ''
  return text.length > 200 ? `${text.slice(0, 200)}…` : text
}
