/**
 * What to say to check when an MCP server does not start or answer. Apart from
 * environment.ts, which loads the SDK: the target names it when it is made.
 */
import type { McpTargetConfig } from '../../config/types.js'

/** What to check when a stdio server does not start or answer (the proxy's refusal, `interlock check`'s row). */
export function startHint(configKey: string, config: Pick<McpTargetConfig, 'url' | 'connectTimeoutMs'>): string {
  if (config.url) return `Check ${configKey}.url and headers, and that the server answers there.`
  return (
    `Check ${configKey}.command, args and cwd (the server must start and speak MCP on stdio); ` +
    `its environment: add what it needs to start with ${configKey}.env, e.g. env = { NODE_EXTRA_CA_CERTS = "\${NODE_EXTRA_CA_CERTS}" }, ` +
    `or pass variables on as they are with env_pass = ["HTTPS_PROXY", "NO_PROXY"]; ` +
    `and its start time: it must answer initialize within connect_timeout_ms (now ${config.connectTimeoutMs} ms), and a first "npx -y" downloads the package first.`
  )
}
