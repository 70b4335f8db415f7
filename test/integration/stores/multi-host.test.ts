/**
 * Multi-host URLs on a real primary with a streaming standby (Debian's
 * PostgreSQL 15): whichever order the hosts come in, a read-write store
 * lands on the primary; `standby` lands on the standby; a URL whose hosts
 * are all standbys is unavailable (retry later), naming each host and never
 * the password; and a pool follows a failover: once the primary is killed
 * and the standby promoted, its new connections go to the new primary.
 */
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../../src/core/config/load.js'
import { StoreUnavailableError } from '../../../src/core/errors.js'
import { connectClient, createPool, newClient } from '../../../src/core/stores/postgres/connect.js'
import { install } from '../../../src/core/stores/migrate.js'
import { openStore } from '../../../src/core/stores/open.js'
import { debianPostgresMissing, startReplicatedPostgres, type ReplicatedPostgres } from '../../helpers/replicated-postgres.js'

const missing = debianPostgresMissing()
let cluster: ReplicatedPostgres

beforeAll(async () => {
  if (missing) throw new Error(missing)
  cluster = await startReplicatedPostgres({ sync: false })
}, 120_000)
afterAll(async () => {
  await cluster?.stop()
})

const url = (hosts: string, attrs?: string) => `postgresql://postgres:not-a-secret@${hosts}/postgres${attrs ? `?target_session_attrs=${attrs}` : ''}`
const port = async (u: string) => {
  const c = await connectClient(u, 'test')
  try {
    return Number((await c.query('SELECT inet_server_port() AS p')).rows[0].p)
  } finally {
    await c.end()
  }
}

describe('multi-host URLs', { timeout: 120_000 }, () => {
  it('read-write and primary land on the primary in either order; standby on the standby; any on the first', async () => {
    const [p, s] = cluster.nodes.map((n) => `127.0.0.1:${n.port}`) as [string, string]
    const primary = cluster.primary().port
    const standby = cluster.standby().port
    for (const attrs of ['read-write', 'primary']) {
      expect(await port(url(`${p},${s}`, attrs))).toBe(primary)
      expect(await port(url(`${s},${p}`, attrs))).toBe(primary)
    }
    expect(await port(url(`${p},${s}`, 'standby'))).toBe(standby)
    expect(await port(url(`${p},${s}`, 'prefer-standby'))).toBe(standby)
    expect(await port(url(`${s},${p}`))).toBe(standby)
    // A dead host first: the next one that answers.
    expect(await port(url(`127.0.0.1:1,${p}`, 'read-write'))).toBe(primary)
  })

  it('the store (install, open, read) through a URL whose standby comes first', async () => {
    const [p, s] = cluster.nodes.map((n) => `127.0.0.1:${n.port}`) as [string, string]
    const config = parseConfig(`[store]\nkind = "postgres"\nurl = "${url(`${s},${p}`, 'read-write')}"\nschema = "multi"\n`, { file: 'interlock.toml' })
    await install(config.store)
    const store = await openStore(config.store)
    try {
      expect(await store.countByState()).toMatchObject({ PROPOSED: 0 })
    } finally {
      await store.close()
    }
  })

  it('no host qualifies: StoreUnavailableError naming each host and why, never the password', async () => {
    const s = `127.0.0.1:${cluster.standby().port}`
    const err = await connectClient(url(`${s},127.0.0.1:1`, 'read-write'), 'the test store').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StoreUnavailableError)
    const message = (err as Error).message
    expect(message).toContain(`${s} is a standby (in recovery)`)
    expect(message).toContain('127.0.0.1:1: ')
    expect(message).not.toContain('not-a-secret')
  })

  it('a pool follows the failover: after the primary dies and the standby is promoted, new connections reach it', async () => {
    const pool = createPool(url(cluster.hostList, 'read-write'), { maxConnections: 2, connectTimeoutMs: 2_000 })
    try {
      const before = cluster.primary().port
      expect(Number((await pool.query('SELECT inet_server_port() AS p')).rows[0].p)).toBe(before)
      await cluster.killPrimary()
      // Unavailable while no host qualifies.
      const during = await pool.query('SELECT 1').catch((e: unknown) => e)
      expect(during).toBeInstanceOf(Error)
      await cluster.promote()
      const after = cluster.primary().port
      expect(after).not.toBe(before)
      // The connection the pool held died with the server; the next ones go to the new primary.
      let answered: number | undefined
      for (let i = 0; i < 50 && answered === undefined; i++) {
        answered = await pool.query('SELECT inet_server_port() AS p, pg_is_in_recovery() AS r').then(
          (r) => (r.rows[0].r ? undefined : Number(r.rows[0].p)),
          () => undefined,
        )
      }
      expect(answered).toBe(after)
      await pool.query('CREATE TABLE IF NOT EXISTS after_failover (x int)')
    } finally {
      await pool.end()
    }
    // The pool's clients are plain pg clients to the world: a listener set before connect survives host changes.
    const c = newClient(url(cluster.hostList, 'read-write'), {})
    let ended = false
    c.on('end', () => (ended = true))
    await c.connect()
    expect(Number((await c.query('SELECT inet_server_port() AS p')).rows[0].p)).toBe(cluster.primary().port)
    await c.end()
    expect(ended).toBe(true)
  })
})

describe('a host lost during the session check', { timeout: 120_000 }, () => {
  it('is passed over for the next host: the pool connects to the primary, and nothing is left to crash the process', async () => {
    const primary = cluster.primary().port
    // A proxy to the primary that resets the connection when the session check arrives (as a host killed
    // right then would): the client sees ECONNRESET mid-query, with no pool listener on it yet.
    const sockets = new Set<net.Socket>()
    let resets = 0
    const proxy = net.createServer((client) => {
      const upstream = net.connect(primary, '127.0.0.1')
      sockets.add(client).add(upstream)
      client.on('data', (d) => {
        if (d.includes('pg_is_in_recovery')) {
          resets++
          client.resetAndDestroy()
          upstream.destroy()
          return
        }
        upstream.write(d)
      })
      upstream.on('data', (d) => client.write(d))
      client.on('error', () => upstream.destroy())
      upstream.on('error', () => client.destroy())
    })
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
    const pool = createPool(url(`127.0.0.1:${(proxy.address() as net.AddressInfo).port},127.0.0.1:${primary}`, 'read-write'))
    const uncaught: unknown[] = []
    const onUncaught = (e: unknown) => uncaught.push(e)
    process.on('uncaughtException', onUncaught)
    try {
      for (let i = 0; i < 3; i++) expect(Number((await pool.query('SELECT inet_server_port() AS p')).rows[0].p)).toBe(primary)
      expect(resets).toBeGreaterThan(0)
      expect(uncaught).toEqual([])
    } finally {
      process.off('uncaughtException', onUncaught)
      await pool.end()
      for (const s of sockets) s.destroy()
      await new Promise((r) => proxy.close(r))
    }
  })
})
