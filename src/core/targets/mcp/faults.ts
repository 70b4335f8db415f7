/**
 * What a failed `tools/call` means, for the gate to decide by tier
 * (docs/design.md, "Faults on the wire"). MCP reports two kinds of error
 * (modelcontextprotocol.io/specification/2025-06-18/server/tools#error-handling):
 *
 * - a tool execution error: a result with `isError: true`. The tool ran and
 *   said no: a definite refusal, FAILED, its result kept as the answer.
 * - a protocol error: a JSON-RPC error. Those that say the request itself was
 *   not taken (parse error, invalid request, unknown method, invalid params:
 *   "unknown tool", arguments that fail the schema) are refusals too: the tool
 *   never ran. Any other (an internal error of the server, an error code of its
 *   own) may come from a tool that had already changed something: unknown.
 *
 * And the transport's own: no answer within timeout_ms (the SDK cancels the
 * request on the way out), the session closing under the call (the server
 * died, or sent what is not JSON-RPC), an HTTP server's 5xx: unknown. A
 * server that could not be started or reached, or a request that could not
 * be written: not sent.
 */
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import { DispatchFault } from '../../errors.js'
import { UpstreamUnavailable } from './link.js'

/** JSON-RPC errors that say the request was refused before any tool ran. */
const NOT_TAKEN = new Set<number>([ErrorCode.ParseError, ErrorCode.InvalidRequest, ErrorCode.MethodNotFound, ErrorCode.InvalidParams, ErrorCode.UrlElicitationRequired])

/** The fault a failed call is, `where` naming the call ("target notes: tools/call edit_file"); `closed` is why the session ended, if it did. */
export function callFault(err: unknown, where: string, closed?: string): DispatchFault {
  if (err instanceof DispatchFault) return err
  if (err instanceof UpstreamUnavailable) return new DispatchFault('not-sent', `${where}: not sent: ${err.message}`, { cause: err })
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout) return new DispatchFault('unknown', `${where}: ${timeoutText(err)}; the server may have acted on it`, { cause: err })
    if (err.code === ErrorCode.ConnectionClosed) return new DispatchFault('unknown', `${where}: ${closed ?? 'the session closed'} while the call was in flight`, { cause: err })
    const answer = { error: { code: err.code, message: serverMessage(err), ...(err.data === undefined ? {} : { data: err.data }) } }
    if (NOT_TAKEN.has(err.code)) return new DispatchFault('refused', `${where}: the server refused the request: ${serverMessage(err)} (JSON-RPC error ${err.code})`, { cause: err, answer })
    return new DispatchFault('unknown', `${where}: the server answered JSON-RPC error ${err.code}: ${serverMessage(err)}; the tool may have acted before it failed`, { cause: err })
  }
  if (err instanceof StreamableHTTPError) {
    const status = err.code ?? 0
    // 404: the server forgot the session (it restarted); nothing of this request was taken.
    if (status === 404) return new DispatchFault('not-sent', `${where}: the server no longer knows the session (HTTP 404)`, { cause: err })
    if (status >= 400 && status < 500) return new DispatchFault('refused', `${where}: the server refused the request with HTTP ${status}`, { cause: err })
    return new DispatchFault('unknown', `${where}: the server answered HTTP ${status}`, { cause: err })
  }
  const message = err instanceof Error ? err.message : String(err)
  if (message === 'Not connected' || connectionRefused(err)) return new DispatchFault('not-sent', `${where}: not sent: ${message}`, { cause: err })
  if (closed) return new DispatchFault('unknown', `${where}: ${closed} while the call was in flight`, { cause: err })
  return new DispatchFault('unknown', `${where}: ${message}`, { cause: err })
}

function timeoutText(err: McpError): string {
  const ms = (err.data as { timeout?: unknown } | undefined)?.timeout
  return typeof ms === 'number' ? `no answer within ${ms} ms (timeout_ms)` : 'no answer in time (timeout_ms)'
}

/** The server's own words, without the SDK's "MCP error <code>: " prefix. */
export function serverMessage(err: McpError): string {
  return err.message.replace(/^MCP error -?\d+: /, '')
}

function connectionRefused(err: unknown): boolean {
  const cause = (err as { cause?: { code?: unknown } } | undefined)?.cause
  return cause?.code === 'ECONNREFUSED'
}
