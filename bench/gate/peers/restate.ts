/**
 * Restate: one handler that makes one `ctx.run` (a journaled step), served by
 * the TypeScript SDK, behind the real restate-server from npm, invoked through
 * its ingress and waiting for the result. Restate's own log is a RocksDB WAL
 * it fsyncs (`rocksdb-disable-wal-fsync = false` by default).
 */
import type { Context } from '@restatedev/restate-sdk'
import { freePort } from '../../../test/helpers/free-port.js'
import { startRestate, until } from '../../../test/helpers/restate-server.js'
import { spawnWithFlushDelay } from './slow-flush.js'
import type { Peer } from './peer.js'

export async function restatePeer(flushDelayUs: number): Promise<Peer> {
  const server = await startRestate({
    spawn: (command, args, options) => spawnWithFlushDelay(flushDelayUs, command, args, options),
    retries: 'server default',
    logFilter: 'error',
  })
  try {
    // The SDK logs every invocation at INFO to the console unless told otherwise, read once at load:
    // a line per step would be the benchmark's cost, not Restate's.
    process.env.RESTATE_LOGGING ??= 'WARN'
    const restate = await import('@restatedev/restate-sdk')
    const bench = restate.service({
      name: 'bench',
      handlers: { one: async (ctx: Context) => ctx.run('noop', async () => 1) },
    })
    const endpointPort = await freePort()
    await restate.serve({ services: [bench], port: endpointPort })
    await server.register(`http://127.0.0.1:${endpointPort}`)
    const one = async () => {
      const r = await fetch(`${server.ingress}/bench/one`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      if (!r.ok) throw new Error(`restate invocation failed: ${r.status} ${await r.text()}`)
      await r.arrayBuffer()
    }
    // The first calls wait for partitions to be ready.
    await until(async () => (await one().then(() => true, () => false)), 60_000, () => `restate never answered an invocation:\n${server.log()}`)
    return { name: 'Restate ctx.run', one, close: () => server.stop() }
  } catch (e) {
    await server.stop()
    throw e
  }
}
