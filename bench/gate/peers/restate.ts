/**
 * Restate: one handler that makes one `ctx.run` (a journaled step), served by
 * the TypeScript SDK, behind the real restate-server from npm, invoked through
 * its ingress and waiting for the result. Restate's own log is a RocksDB WAL
 * it fsyncs (`rocksdb-disable-wal-fsync = false` by default).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { Context } from '@restatedev/restate-sdk'
import { freePort } from '../../../test/helpers/free-port.js'
import { spawnWithFlushDelay } from './slow-flush.js'
import type { Peer } from './peer.js'

function serverBinary(): string {
  const require = createRequire(import.meta.url)
  return join(dirname(require.resolve('@restatedev/restate-server-linux-x64/package.json')), 'bin', 'restate-server')
}

export async function restatePeer(flushDelayUs: number): Promise<Peer> {
  const base = mkdtempSync(join(tmpdir(), 'interlock-bench-restate-'))
  const [ingress, admin, fabric, endpointPort] = [await freePort(), await freePort(), await freePort(), await freePort()]
  const env = {
    ...process.env,
    RESTATE_BASE_DIR: base,
    RESTATE_LISTEN_MODE: 'tcp',
    RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingress}`,
    RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${admin}`,
    RESTATE_BIND_ADDRESS: `127.0.0.1:${fabric}`,
    RESTATE_ADVERTISED_ADDRESS: `http://127.0.0.1:${fabric}/`,
    RESTATE_DISABLE_TELEMETRY: 'true',
    RESTATE_LOG_FILTER: 'error',
  }
  // A process group of its own: under strace the server is strace's child, and stopping strace alone
  // would leave the server running; the group is stopped whole.
  const server = spawnWithFlushDelay(flushDelayUs, serverBinary(), ['--no-logo'], { env, stdio: ['ignore', 'ignore', 'pipe'], detached: true })
  let log = ''
  server.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)))
  const stop = async () => {
    const exited = new Promise((r) => server.once('exit', r))
    const group = (signal: NodeJS.Signals) => {
      try {
        process.kill(-server.pid!, signal)
      } catch {
        // Already gone.
      }
    }
    group('SIGTERM')
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))])
    if (server.exitCode === null) group('SIGKILL')
    rmSync(base, { recursive: true, force: true })
  }
  try {
    // The SDK logs every invocation at INFO to the console unless told otherwise, read once at load:
    // a line per step would be the benchmark's cost, not Restate's.
    process.env.RESTATE_LOGGING ??= 'WARN'
    const restate = await import('@restatedev/restate-sdk')
    const bench = restate.service({
      name: 'bench',
      handlers: { one: async (ctx: Context) => ctx.run('noop', async () => 1) },
    })
    await restate.serve({ services: [bench], port: endpointPort })
    await until(async () => (await fetch(`http://127.0.0.1:${admin}/health`)).ok, 60_000, () => `restate-server did not become healthy:\n${log}`)
    const reg = await fetch(`http://127.0.0.1:${admin}/deployments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uri: `http://127.0.0.1:${endpointPort}`, force: true }),
    })
    if (!reg.ok) throw new Error(`registering the deployment failed: ${reg.status} ${await reg.text()}`)
    const one = async () => {
      const r = await fetch(`http://127.0.0.1:${ingress}/bench/one`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      if (!r.ok) throw new Error(`restate invocation failed: ${r.status} ${await r.text()}`)
      await r.arrayBuffer()
    }
    // The first calls wait for partitions to be ready.
    await until(async () => (await one().then(() => true, () => false)), 60_000, () => `restate never answered an invocation:\n${log}`)
    return { name: 'Restate ctx.run', one, close: stop }
  } catch (e) {
    await stop()
    throw e
  }
}

async function until(ok: () => Promise<boolean>, ms: number, why: () => string): Promise<void> {
  const end = Date.now() + ms
  for (;;) {
    if (await ok().catch(() => false)) return
    if (Date.now() > end) throw new Error(why())
    await new Promise((r) => setTimeout(r, 250))
  }
}
