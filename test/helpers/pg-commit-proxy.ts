/**
 * A TCP proxy in front of PostgreSQL that can lose the answer to the COMMIT
 * of a transaction that sent an INSERT:
 * the COMMIT reaches the server (which commits), and then
 * - 'cut': the client's connection is closed before any answer arrives;
 * - 'silence': the answer is swallowed and the connection left open, so only
 *   the client's own timeout ends the wait.
 * Either way the client cannot know whether its transaction committed, which
 * is the one fault a real network produces that a test server alone cannot.
 */
import net from 'node:net'
import type { AddressInfo } from 'node:net'

/** pg sends a bare COMMIT as a simple Query message: 'Q', int32 length 11, "COMMIT\0". */
const COMMIT_MESSAGE = Buffer.from('Q\x00\x00\x00\x0bCOMMIT\x00', 'latin1')
const INSERT = Buffer.from('INSERT INTO')

export type CommitFault = 'cut' | 'silence'

export interface PgCommitProxy {
  /** The database URL, pointed at the proxy. */
  url: string
  /**
   * Lose the answer of the next write transaction's COMMIT (one time). Resolves
   * once the server has answered that COMMIT (to nobody): the commit is done.
   */
  loseNextCommit(how: CommitFault): Promise<void>
  /** COMMITs whose answer was lost so far. */
  readonly lost: number
  close(): Promise<void>
}

export async function startPgCommitProxy(databaseUrl: string): Promise<PgCommitProxy> {
  const upstreamUrl = new URL(databaseUrl)
  const sockets = new Set<net.Socket>()
  let armed: { how: CommitFault; answered: () => void } | undefined
  let lost = 0

  const server = net.createServer((client) => {
    const upstream = net.connect(Number(upstreamUrl.port), upstreamUrl.hostname)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {})
    }
    let silenced = false
    let cutting = false
    // Only a write transaction's COMMIT is lost, not that of a read (capture, validatePremises).
    let wrote = false
    client.on('data', (chunk) => {
      if (chunk.includes(INSERT)) wrote = true
      if (chunk.includes(COMMIT_MESSAGE)) {
        const write = wrote
        wrote = false
        if (!armed || !write) {
          upstream.write(chunk)
          return
        }
        const { how, answered } = armed
        armed = undefined
        lost += 1
        upstream.write(chunk)
        upstream.once('data', answered)
        upstream.once('close', answered)
        if (how === 'cut') {
          // end(), not destroy(): the COMMIT is flushed to the server before its side closes.
          cutting = true
          upstream.end()
          client.destroy()
        } else {
          silenced = true
        }
        return
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk) => {
      if (!silenced) client.write(chunk)
    })
    client.on('close', () => {
      if (!cutting) upstream.destroy()
    })
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(databaseUrl)
  url.hostname = '127.0.0.1'
  url.port = String((server.address() as AddressInfo).port)

  return {
    url: url.toString(),
    loseNextCommit: (how) =>
      new Promise<void>((answered) => {
        armed = { how, answered }
      }),
    get lost() {
      return lost
    },
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
