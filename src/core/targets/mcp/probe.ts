/**
 * `interlock check`'s read-only look at an MCP server: start or reach it,
 * initialize a session, list its tools (tools/list changes nothing), and say
 * for every tool the tier it will get and why (a row each,
 * `targets.<name>.tools.<tool>`). A declared tool, query or premise the
 * server does not have is a failing row naming its key path: a mistake in
 * interlock.toml. Nothing else is called.
 */
import type { ProbeResult, ProbeRow } from '../target.js'
import { UpstreamUnavailable } from './link.js'
import type { McpTarget } from './mcp-target.js'
import { tierText } from './tiers.js'

export async function probeMcp(target: McpTarget, signal?: AbortSignal): Promise<ProbeResult> {
  const link = target.openProbeLink()
  const closing = () => void link.close()
  signal?.addEventListener('abort', closing, { once: true })
  try {
    let tools: Record<string, unknown>[]
    let serverName: string
    try {
      const conn = await link.get()
      serverName = conn.serverInfo ? `${conn.serverInfo.name} ${conn.serverInfo.version}` : 'the server'
      if (!conn.serverCapabilities.tools) return { ok: false, detail: `${target.where}: ${serverName} offers no tools (no tools capability)`, fix: 'Point the target at an MCP server that has tools.' }
      tools = await conn.listTools({ signal })
    } catch (e) {
      const detail = e instanceof UpstreamUnavailable ? e.message : `${target.where}: ${(e as Error).message}`
      return { ok: false, detail, fix: target.unreachableHint }
    }
    target.addTools(tools)
    const problems = target.unknownTools()
    const rows: ProbeRow[] = target.decisions().map((d) => {
      const problem = problems.find((p) => p.startsWith(`targets.${target.name}.tools.${d.tool}:`))
      if (problem) return { id: `tools.${d.tool}`, name: `tool ${d.tool} exists`, status: 'fail', detail: problem, fix: 'Fix the tool name in interlock.toml, or remove its table.', config: true }
      const readAnyway = d.declared && d.tier === 'read' && listed(tools, d.tool)?.readOnlyHint === false
      return {
        id: `tools.${d.tool}`,
        name: `tool ${d.tool}: ${tierText(d.tier)}`,
        status: readAnyway ? 'warn' : 'pass',
        detail: `${tierText(d.tier)}: ${d.why}${readAnyway ? '; its annotations say it changes something, yet it is declared read and will not be journaled' : ''}`,
        ...(readAnyway ? { fix: 'Declare it tier 1, 2 or 3 unless you are sure it changes nothing.' } : {}),
      }
    })
    for (const p of problems.filter((p) => !rows.some((r) => r.detail === p))) {
      const id = p.slice(`targets.${target.name}.`.length).split(':')[0]!
      rows.push({ id, name: `${id} names a tool the server has`, status: 'fail', detail: p, fix: 'Fix the tool name in interlock.toml.', config: true })
    }
    const journaled = target.decisions().filter((d) => d.tier !== 'read').length
    return {
      ok: true,
      detail: `${serverName}: ${tools.length} tool${tools.length === 1 ? '' : 's'} (${journaled} journaled, ${tools.length - journaled} read)`,
      tier:
        problems.length === 0
          ? { ok: true, detail: 'every tool has a tier it can be held to; every declared tool, query and premise exists' }
          : { ok: false, detail: problems.join('; '), fix: 'Fix the tool names in [targets.<name>.tools] of interlock.toml.' },
      rows,
    }
  } finally {
    signal?.removeEventListener('abort', closing)
    await link.close()
  }
}

function listed(tools: Record<string, unknown>[], name: string): { readOnlyHint?: boolean } | undefined {
  const t = tools.find((x) => x.name === name)
  return (t?.annotations as { readOnlyHint?: boolean } | undefined) ?? undefined
}
