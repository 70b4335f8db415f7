/**
 * A real PostgreSQL primary with a streaming standby, from Debian's
 * PostgreSQL 15 binaries (/usr/lib/postgresql/15/bin; `.ci/run` installs
 * them when absent), on loopback ports the OS picks, data under the OS temp
 * folder. As root, every server program runs as the `postgres` system user,
 * which owns the data. `sync` names the standby in synchronous_standby_names;
 * otherwise it streams asynchronously. `stop()` stops both and removes the data.
 *
 * For failovers: `killPrimary()` SIGKILLs the primary's postmaster and every
 * process of it (a machine dying, not a shutdown), `promote()` promotes the
 * standby (`pg_ctl promote`), `rejoin()` makes the dead node a standby of
 * the new primary again (a fresh base backup) and, when synchronous, the one
 * its commits wait for. A promoted standby names no standby to wait for
 * until one rejoins (as Patroni does outside synchronous_mode_strict): with
 * its standby dead it is a single server, and its commits must not hang.
 */
import { execFileSync } from 'node:child_process'
import { appendFileSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { freePort } from './free-port.js'
import { startLaggingLink, type LaggingLink } from './lagging-link.js'

export const PG15_BIN = '/usr/lib/postgresql/15/bin'

export interface PgNode {
  /** Its application_name as a standby. */
  name: string
  port: number
  dataDir: string
  url: string
}

export interface ReplicatedPostgres {
  primaryUrl: string
  standbyUrl: string
  /** Both nodes, in the order they were made (the first started as primary). */
  nodes: [PgNode, PgNode]
  /** `127.0.0.1:p1,127.0.0.1:p2`: both hosts, for a multi-host URL. */
  hostList: string
  primary(): PgNode
  standby(): PgNode
  /** SIGKILLs the primary's postmaster and its processes; resolves once all are gone. */
  killPrimary(): Promise<void>
  /** `pg_ctl promote -w` on the standby: it is the primary from then on. */
  promote(): Promise<void>
  /** The dead node, rebuilt from the new primary, streams from it (synchronously when sync). */
  rejoin(): Promise<void>
  /**
   * The dead node's data as it was when killed (every commit it made, told
   * to its client or not), read through a server started on it alone, on a
   * port no URL names, and stopped again. Before rejoin(), which replaces it.
   */
  inspectDead<T>(read: (url: string) => Promise<T>): Promise<T>
  /** Until the standby has replayed everything the primary has written so far. */
  caughtUp(): Promise<void>
  /** Stops the standby (fast shutdown): what the primary commits meanwhile never reaches it. */
  stopStandby(): void
  startStandby(): void
  stop(): Promise<void>
}

export function debianPostgresMissing(): string | undefined {
  return existsSync(join(PG15_BIN, 'postgres')) ? undefined : `Debian's PostgreSQL 15 is not installed (${PG15_BIN}); apt-get install postgresql-15`
}

/**
 * `lagMs`: the standby streams through a link with that latency (a standby
 * in another zone), and killPrimary() cuts it, losing what was on its way.
 */
export async function startReplicatedPostgres(o: { sync: boolean; synchronousCommit?: 'on' | 'remote_apply'; lagMs?: number }): Promise<ReplicatedPostgres> {
  const root = userInfo().uid === 0
  const dir = mkdtempSync(join(tmpdir(), 'interlock-replicated-'))
  if (root) chownSync(dir, ...postgresIds())
  const run = (program: string, args: string[]) => {
    const cmd = join(PG15_BIN, program)
    return root ? execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { stdio: 'pipe', cwd: dir }) : execFileSync(cmd, args, { stdio: 'pipe', cwd: dir })
  }
  const node = (name: string, port: number): PgNode => ({ name, port, dataDir: join(dir, name), url: `postgresql://postgres@127.0.0.1:${port}/postgres` })
  const nodes: [PgNode, PgNode] = [node('node1', await freePort()), node('node2', await freePort())]
  let primary = 0
  let dead: number | undefined
  const running = new Set<PgNode>()
  let link: LaggingLink | undefined
  const stop = async () => {
    await link?.close()
    for (const n of running) {
      try {
        run('pg_ctl', ['-D', n.dataDir, '-m', 'immediate', 'stop'])
      } catch {}
    }
    running.clear()
    rmSync(dir, { recursive: true, force: true })
  }
  const start = (n: PgNode) => {
    run('pg_ctl', ['-D', n.dataDir, '-l', join(dir, `${n.name}.log`), '-w', 'start'])
    running.add(n)
  }
  /** A standby of `from`, from a fresh base backup; its own synchronous_standby_names empty (see above). */
  const makeStandby = (n: PgNode, from: PgNode, viaPort = from.port) => {
    rmSync(n.dataDir, { recursive: true, force: true })
    run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(from.port), '-U', 'postgres', '-D', n.dataDir, '-R', '--no-sync', '-X', 'stream', '--checkpoint=fast'])
    appendFileSync(join(n.dataDir, 'postgresql.conf'), `\nport = ${n.port}\nsynchronous_standby_names = ''\n`)
    appendFileSync(join(n.dataDir, 'postgresql.auto.conf'), `\nprimary_conninfo = 'host=127.0.0.1 port=${viaPort} user=postgres application_name=${n.name}'\n`)
    start(n)
  }
  /** Until `standby` streams from `from` (and, sync, is its synchronous standby). */
  const streaming = async (from: PgNode, standby: PgNode) => {
    const end = Date.now() + 30_000
    for (;;) {
      const c = new pg.Client({ connectionString: from.url })
      await c.connect()
      const { rows } = await c.query(`SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming' AND application_name = $1`, [standby.name])
      await c.end()
      if (rows.length > 0 && (!o.sync || rows[0].sync_state === 'sync')) return
      if (Date.now() > end) throw new Error(`${standby.name} did not start streaming from ${from.name} within 30 s`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  const sql = async (n: PgNode, ...texts: string[]) => {
    const c = new pg.Client({ connectionString: n.url })
    await c.connect()
    try {
      for (const text of texts) await c.query(text)
    } finally {
      await c.end()
    }
  }
  try {
    const [first, second] = nodes
    run('initdb', ['-D', first.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync'])
    appendFileSync(
      join(first.dataDir, 'postgresql.conf'),
      `\nport = ${first.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nwal_level = replica\nmax_wal_senders = 5\nhot_standby = on\nfsync = off\nmax_connections = 200\n` +
        `synchronous_standby_names = '${o.sync ? second.name : ''}'\nsynchronous_commit = ${o.synchronousCommit ?? 'on'}\n`,
    )
    writeFileSync(join(first.dataDir, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n')
    start(first)
    if (o.lagMs) link = await startLaggingLink(first.port, o.lagMs)
    makeStandby(second, first, link?.port)
    // Streaming, and (sync) counted as the synchronous standby, before anyone reads the settings.
    await streaming(first, second)
  } catch (e) {
    await stop()
    throw e
  }
  return {
    primaryUrl: nodes[0].url,
    standbyUrl: nodes[1].url,
    nodes,
    hostList: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    primary: () => nodes[primary]!,
    standby: () => nodes[1 - primary]!,
    killPrimary: async () => {
      const n = nodes[primary]!
      const postmaster = Number(readFileSync(join(n.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
      const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)]).toString().split(/\s+/).filter(Boolean).map(Number)
      // All at once, as a machine dies: every process stopped first (SIGSTOP), so that no backend
      // commits and no WAL sender sends while the others are being killed; then SIGKILL.
      for (const signal of ['SIGSTOP', 'SIGKILL'] as const) {
        for (const pid of [postmaster, ...children]) {
          try {
            process.kill(pid, signal)
          } catch {}
        }
        // And what was still on the network to the standby is lost with it.
        if (signal === 'SIGSTOP') link?.cut()
      }
      const end = Date.now() + 10_000
      while ([postmaster, ...children].some(alive)) {
        if (Date.now() > end) throw new Error(`${n.name}'s processes outlived SIGKILL for 10 s`)
        await new Promise((r) => setTimeout(r, 10))
      }
      running.delete(n)
      dead = primary
    },
    promote: async () => {
      const n = nodes[1 - primary]!
      run('pg_ctl', ['-D', n.dataDir, '-w', 'promote'])
      primary = 1 - primary
    },
    rejoin: async () => {
      if (dead === undefined) throw new Error('no node is dead')
      const n = nodes[dead]!
      const from = nodes[primary]!
      makeStandby(n, from)
      dead = undefined
      if (o.sync) await sql(from, `ALTER SYSTEM SET synchronous_standby_names = '${n.name}'`, 'SELECT pg_reload_conf()')
      await streaming(from, n)
    },
    inspectDead: async (read) => {
      if (dead === undefined) throw new Error('no node is dead')
      const n = nodes[dead]!
      const port = await freePort()
      run('pg_ctl', ['-D', n.dataDir, '-l', join(dir, `${n.name}-inspect.log`), '-o', `-p ${port} -c synchronous_standby_names=''`, '-w', 'start'])
      try {
        return await read(`postgresql://postgres@127.0.0.1:${port}/postgres`)
      } finally {
        run('pg_ctl', ['-D', n.dataDir, '-m', 'fast', '-w', 'stop'])
      }
    },
    caughtUp: async () => {
      const p = new pg.Client({ connectionString: nodes[primary]!.url })
      const st = new pg.Client({ connectionString: nodes[1 - primary]!.url })
      await p.connect()
      await st.connect()
      try {
        const lsn = (await p.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l as string
        const end = Date.now() + 30_000
        while (!(await st.query('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn])).rows[0].ok) {
          if (Date.now() > end) throw new Error(`the standby did not replay up to ${lsn} within 30 s`)
          await new Promise((r) => setTimeout(r, 20))
        }
      } finally {
        await p.end()
        await st.end()
      }
    },
    stopStandby: () => {
      const n = nodes[1 - primary]!
      run('pg_ctl', ['-D', n.dataDir, '-m', 'fast', '-w', 'stop'])
      running.delete(n)
    },
    startStandby: () => start(nodes[1 - primary]!),
    stop,
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

function postgresIds(): [number, number] {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
  return [uid, gid]
}
