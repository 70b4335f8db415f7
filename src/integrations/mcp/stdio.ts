/**
 * One client on stdin/stdout for as long as it stays: the SDK's stdio
 * transport does not end on EOF by itself, and a host that just closes the
 * pipe, or dies, must not leave a proxy (and its server) behind; `stop`
 * (SIGTERM, SIGINT) ends it too.
 */
import { randomUUID } from 'node:crypto'
import type { Readable, Writable } from 'node:stream'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { osUserPrincipal, type Principal } from './principal.js'

export async function serveOneOverStdio(
  serve: (transport: Transport, sessionId: string, principal: Principal) => Promise<void>,
  input: Readable,
  output: Writable,
  stop?: AbortSignal,
): Promise<void> {
  const transport = new StdioServerTransport(input, output)
  const end = () => void transport.close()
  input.once('end', end)
  input.once('close', end)
  stop?.addEventListener('abort', end, { once: true })
  try {
    await serve(transport, randomUUID(), osUserPrincipal())
  } finally {
    input.off('end', end)
    input.off('close', end)
    stop?.removeEventListener('abort', end)
  }
}
