/**
 * What a stdio MCP server is started with, and what to say when it does not
 * start.
 *
 * Its environment is the SDK's safe defaults (HOME, LOGNAME, PATH, SHELL,
 * TERM and USER, those that are set), the variables `env_pass` names (those
 * that are set, as they are), then the target's `env`: nothing else of
 * Interlock's own environment (a database URL, a relay key's passphrase)
 * reaches it. A server that needs more (a proxy, a CA bundle, a token) hangs
 * or exits at start, so the failure names the variables it was given (names,
 * never values) and the keys that add to them.
 */
import { DEFAULT_INHERITED_ENV_VARS, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { McpTargetConfig } from '../../config/types.js'

export type ServerEnvSpec = Pick<McpTargetConfig, 'env' | 'envPass'>

/** The server's environment: the safe defaults, what env_pass names, then env. */
export function serverEnvironment(spec: Partial<ServerEnvSpec>, from: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const passed: Record<string, string> = {}
  for (const name of spec.envPass ?? []) {
    const value = from[name]
    if (value !== undefined) passed[name] = value
  }
  return { ...getDefaultEnvironment(), ...passed, ...spec.env }
}

/** The variables the server was given, by name, and the keys that add to them: for a server that did not start. */
export function environmentNote(spec: Partial<ServerEnvSpec>, configKey: string, from: NodeJS.ProcessEnv = process.env): string {
  const names = Object.keys(serverEnvironment(spec, from))
  return (
    `its environment held ${names.length === 0 ? 'no variable' : names.join(', ')}: of Interlock's own environment a server gets only ` +
    `${DEFAULT_INHERITED_ENV_VARS.join(', ')}, plus what ${configKey}.env sets and ${configKey}.env_pass names`
  )
}
