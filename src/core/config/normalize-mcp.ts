/**
 * An [targets.<name>] of type "mcp" after schema validation: defaults
 * applied, snake_case → camelCase, `cwd` resolved against the config file's
 * folder (so a relative server path means the same from any working
 * directory). The casts are safe because the document passed the schema.
 */
import { isAbsolute, resolve } from 'node:path'
import type { Tier } from '../effect.js'
import { DEFAULTS } from './defaults.js'
import { parseDuration } from './policy.js'
import type { McpProxyHttpConfig, McpReadConfig, McpTargetConfig, McpToolConfig } from './types.js'

type Table = Record<string, unknown>

export function normalizeMcp(raw: Table, dir: string): McpTargetConfig {
  const target: McpTargetConfig = {
    type: 'mcp',
    args: [...((raw.args as string[] | undefined) ?? [])],
    env: { ...((raw.env as Record<string, string> | undefined) ?? {}) },
    envPass: [...((raw.env_pass as string[] | undefined) ?? [])],
    headers: { ...((raw.headers as Record<string, string> | undefined) ?? {}) },
    thread: (raw.thread as string | undefined) ?? DEFAULTS.mcpThread,
    timeoutMs: (raw.timeout_ms as number | undefined) ?? DEFAULTS.mcpTimeoutMs,
    connectTimeoutMs: (raw.connect_timeout_ms as number | undefined) ?? DEFAULTS.mcpConnectTimeoutMs,
    maxResultBytes: (raw.max_result_bytes as number | undefined) ?? DEFAULTS.mcpMaxResultBytes,
    tools: {},
  }
  if (typeof raw.command === 'string') {
    target.command = raw.command
    const cwd = (raw.cwd as string | undefined) ?? '.'
    target.cwd = isAbsolute(cwd) ? cwd : resolve(dir, cwd)
  }
  if (typeof raw.url === 'string') target.url = raw.url
  if (Array.isArray(raw.allow)) target.allow = [...(raw.allow as string[])]
  if (Array.isArray(raw.deny)) target.deny = [...(raw.deny as string[])]
  for (const [name, tool] of Object.entries((raw.tools as Record<string, Table> | undefined) ?? {})) target.tools[name] = normalizeTool(tool)
  if (raw.proxy_http !== undefined) target.proxyHttp = normalizeProxyHttp(raw.proxy_http as Table)
  return target
}

export function normalizeProxyHttp(raw: Table): McpProxyHttpConfig {
  const http: McpProxyHttpConfig = {
    allowedHosts: [...((raw.allowed_hosts as string[] | undefined) ?? [])],
    allowedOrigins: [...((raw.allowed_origins as string[] | undefined) ?? [])],
    tokens: ((raw.tokens as Table[] | undefined) ?? []).map((t) => ({ principal: t.principal as string, token: t.token as string })),
  }
  if (typeof raw.resource === 'string') http.resource = raw.resource
  const oauth = raw.oauth as Table | undefined
  if (oauth) {
    http.oauth = { issuer: oauth.issuer as string, scopes: [...((oauth.scopes as string[] | undefined) ?? [])] }
    if (typeof oauth.audience === 'string') http.oauth.audience = oauth.audience
    if (typeof oauth.jwks_uri === 'string') http.oauth.jwksUri = oauth.jwks_uri
  }
  return http
}

function normalizeTool(raw: Table): McpToolConfig {
  const tool: McpToolConfig = {
    tier: raw.tier as Tier | 'read',
    restsOn: ((raw.rests_on as Table[] | undefined) ?? []).map(readOf),
    dedupe: (raw.dedupe as McpToolConfig['dedupe'] | undefined) ?? DEFAULTS.mcpDedupe,
    dedupeWindowMs: parseDuration((raw.dedupe_window as string | undefined) ?? DEFAULTS.mcpDedupeWindow),
  }
  if (typeof raw.key_arg === 'string') tool.keyArg = raw.key_arg
  if (Array.isArray(raw.allow)) tool.allow = [...(raw.allow as string[])]
  if (Array.isArray(raw.deny)) tool.deny = [...(raw.deny as string[])]
  const mark = raw.mark as Table | undefined
  if (mark) tool.mark = { path: mark.path as string, value: mark.value as string }
  const query = raw.query as Table | undefined
  if (query) tool.query = { ...readOf(query), found: query.found as string }
  return tool
}

function readOf(raw: Table): McpReadConfig {
  return { tool: raw.tool as string, args: { ...((raw.args as Table | undefined) ?? {}) } }
}
