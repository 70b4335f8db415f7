/**
 * The MCP integration: `interlock mcp-proxy`, an MCP server in front of one
 * upstream server whose side-effecting tool calls go through the gate. The
 * upstream itself is an `mcp` target (src/core/targets/mcp/).
 */
export { McpProxy, mcpTargetOf, proxiedTargetOf, type McpProxyOptions, type ProxiedTarget } from './proxy.js'
export { ModuleToolProxy, type ModuleToolProxyOptions } from './module-proxy.js'
export { serveHttp, MCP_PATH, type HttpListener, type SessionServer } from './http.js'
export { httpAccess, NO_AUTH_FLAG, type HttpAccess } from './http-access.js'
export { CallDesk, type ProxyMode } from './calls.js'
export { THREAD_META, KEY_META, RETRY_META, STATE_META, REPLAYED_META, EFFECT_META } from './meta.js'
export { chooseOccurrence, type Occurrence } from '../agent/occurrence.js'
export { osUserPrincipal, UNAUTHENTICATED, type Principal } from './principal.js'
