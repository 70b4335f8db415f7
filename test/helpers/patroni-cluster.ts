/**
 * A real failover manager for the failover tests: one etcd (Debian's
 * etcd-server) and two Patroni members (Debian's patroni) running Debian's
 * PostgreSQL 15, all on loopback ports the OS picks, data under the OS temp
 * folder, synchronous_mode on (Patroni names the replica in
 * synchronous_standby_names). As root, Patroni runs as the `postgres` system
 * user. `.ci/run` installs the packages when absent.
 *
 * killPrimary() is the primary's machine dying: its Patroni and every
 * process of its PostgreSQL stopped at once, then SIGKILLed; Patroni on the
 * other member promotes it once the leader key expires (ttl). The dead
 * member is never restarted by itself. stop() kills everything and removes
 * the data.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { freePort } from './free-port.js'
import { PG15_BIN } from './replicated-postgres.js'

export interface PatroniMember {
  name: string
  pgPort: number
  apiPort: number
  dataDir: string
  proc: ChildProcess
  log: string
}

export interface PatroniCluster {
  /** `127.0.0.1:p1,127.0.0.1:p2` */
  hostList: string
  members: PatroniMember[]
  primary(): Promise<PatroniMember | undefined>
  killPrimary(): Promise<void>
  /** Until a member other than the dead one is the primary (Patroni promoted it). */
  promoted(): Promise<void>
  inspectDead<T>(read: (url: string) => Promise<T>): Promise<T>
  logs(): string
  stop(): Promise<void>
}

export function patroniMissing(): string | undefined {
  for (const bin of ['/usr/bin/patroni', '/usr/bin/etcd', join(PG15_BIN, 'postgres')]) {
    if (!existsSync(bin)) return `${bin} is not installed; apt-get install patroni etcd-server postgresql-15`
  }
  return undefined
}

const TTL = 8

export async function startPatroniCluster(): Promise<PatroniCluster> {
  const root = userInfo().uid === 0
  const dir = mkdtempSync(join(tmpdir(), 'interlock-patroni-'))
  const ids = root ? { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) } : undefined
  if (ids) chownSync(dir, ids.uid, ids.gid)
  const procs: ChildProcess[] = []
  const members: PatroniMember[] = []
  let etcdLog = ''
  let dead: PatroniMember | undefined
  const stop = async () => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL')
    await Promise.all(procs.map((p) => (p.exitCode !== null || p.signalCode !== null ? undefined : new Promise((r) => p.once('exit', r)))))
    // Patroni killed leaves its PostgreSQL running: stop each, whoever started it.
    for (const m of members) killPostgres(m.dataDir)
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    const [client, peer] = [await freePort(), await freePort()]
    const etcd = spawn(
      '/usr/bin/etcd',
      [
        '--name', 'e1', '--data-dir', join(dir, 'etcd'),
        '--listen-client-urls', `http://127.0.0.1:${client}`, '--advertise-client-urls', `http://127.0.0.1:${client}`,
        '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
        '--initial-cluster', `e1=http://127.0.0.1:${peer}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir },
    )
    procs.push(etcd)
    etcd.stdout!.on('data', (d) => (etcdLog += d))
    etcd.stderr!.on('data', (d) => (etcdLog += d))
    await until(async () => (await fetch(`http://127.0.0.1:${client}/health`).then((r) => r.ok, () => false)), 30_000, () => `etcd to answer /health:\n${etcdLog.slice(-2000)}`)

    for (const name of ['pg1', 'pg2']) {
      const m = { name, pgPort: await freePort(), apiPort: await freePort(), dataDir: join(dir, name), log: '' } as PatroniMember
      const config = join(dir, `${name}.yml`)
      writeFileSync(
        config,
        `scope: interlock-test
name: ${name}
log: {level: INFO}
restapi: {listen: '127.0.0.1:${m.apiPort}', connect_address: '127.0.0.1:${m.apiPort}'}
etcd3: {hosts: '127.0.0.1:${client}'}
bootstrap:
  dcs:
    ttl: ${TTL}
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: false
      use_slots: true
      parameters: {wal_level: replica, hot_standby: 'on', max_wal_senders: 5, max_replication_slots: 5, fsync: 'off', max_connections: 200, synchronous_commit: 'on'}
  initdb: [{encoding: UTF8}]
  pg_hba: ['local all all trust', 'host all all 127.0.0.1/32 trust', 'host replication all 127.0.0.1/32 trust']
postgresql:
  listen: '127.0.0.1:${m.pgPort}'
  connect_address: '127.0.0.1:${m.pgPort}'
  data_dir: ${m.dataDir}
  bin_dir: ${PG15_BIN}
  pgpass: ${join(dir, `${name}.pgpass`)}
  authentication:
    superuser: {username: postgres, password: postgres}
    replication: {username: postgres, password: postgres}
  parameters: {unix_socket_directories: '${dir}'}
  pg_hba: ['local all all trust', 'host all all 127.0.0.1/32 trust', 'host replication all 127.0.0.1/32 trust']
`,
      )
      if (ids) chownSync(config, ids.uid, ids.gid)
      // Debian's python (/usr/bin/python3, the script's own), whatever python3 PATH names.
      m.proc = spawn('/usr/bin/patroni', [config], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8' }, ...(ids ?? {}) })
      m.proc.stdout!.on('data', (d) => (m.log += d))
      m.proc.stderr!.on('data', (d) => (m.log += d))
      procs.push(m.proc)
      members.push(m)
      // The first bootstraps the cluster before the second joins it.
      if (name === 'pg1') await until(async () => (await role(m)) === 'primary', 60_000, () => `pg1 to become the primary:\n${m.log.slice(-3000)}`)
    }
    // The replica streams and is the synchronous standby.
    await until(async () => (await fetch(`http://127.0.0.1:${members[1]!.apiPort}/sync`).then((r) => r.status === 200, () => false)), 90_000, () => `pg2 to be the synchronous standby:\n${members[1]!.log.slice(-3000)}`)
  } catch (e) {
    await stop()
    throw e
  }
  const primary = async () => {
    for (const m of members) if (m !== dead && (await role(m)) === 'primary') return m
    return undefined
  }
  return {
    hostList: members.map((m) => `127.0.0.1:${m.pgPort}`).join(','),
    members,
    primary,
    killPrimary: async () => {
      const m = await primary()
      if (!m) throw new Error('no primary to kill')
      const postmaster = Number(readFileSync(join(m.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
      const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)]).toString().split(/\s+/).filter(Boolean).map(Number)
      const all = [m.proc.pid!, postmaster, ...children]
      for (const signal of ['SIGSTOP', 'SIGKILL'] as const) {
        for (const pid of all) {
          try {
            process.kill(pid, signal)
          } catch {}
        }
      }
      await until(async () => !all.some(alive), 10_000, () => `${m.name}'s processes to die`)
      dead = m
    },
    promoted: () => until(async () => (await primary()) !== undefined, 120_000, () => `Patroni to promote the replica:\n${members.map((m) => `${m.name}:\n${m.log.slice(-2000)}`).join('\n')}`),
    inspectDead: async (read) => {
      if (!dead) throw new Error('no member is dead')
      const port = await freePort()
      const ctl = (args: string[]) => (root ? execFileSync('runuser', ['-u', 'postgres', '--', join(PG15_BIN, 'pg_ctl'), ...args], { stdio: 'pipe', cwd: dir }) : execFileSync(join(PG15_BIN, 'pg_ctl'), args, { stdio: 'pipe', cwd: dir }))
      ctl(['-D', dead.dataDir, '-l', join(dir, `${dead.name}-inspect.log`), '-o', `-p ${port} -c synchronous_standby_names=''`, '-w', 'start'])
      try {
        return await read(`postgresql://postgres@127.0.0.1:${port}/postgres`)
      } finally {
        ctl(['-D', dead.dataDir, '-m', 'fast', '-w', 'stop'])
      }
    },
    logs: () => `etcd:\n${etcdLog.slice(-2000)}\n${members.map((m) => `${m.name}:\n${m.log.slice(-3000)}`).join('\n')}`,
    stop,
  }
}

/** What Patroni's REST API says the member is: GET /primary is 200 on the leader only. */
async function role(m: PatroniMember): Promise<'primary' | 'other' | 'down'> {
  try {
    const r = await fetch(`http://127.0.0.1:${m.apiPort}/primary`, { signal: AbortSignal.timeout(2_000) })
    await r.body?.cancel()
    return r.status === 200 ? 'primary' : 'other'
  } catch {
    return 'down'
  }
}

function killPostgres(dataDir: string): void {
  const pidFile = join(dataDir, 'postmaster.pid')
  if (!existsSync(pidFile)) return
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0])
  // SIGQUIT: immediate shutdown, the postmaster takes its backends down with it.
  try {
    process.kill(pid, 'SIGQUIT')
  } catch {}
  const end = Date.now() + 10_000
  while (alive(pid) && Date.now() < end) execFileSync('sleep', ['0.05'])
  if (alive(pid)) process.kill(pid, 'SIGKILL')
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function until(cond: () => Promise<boolean>, ms: number, what: () => string): Promise<void> {
  const end = Date.now() + ms
  while (!(await cond().catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what()}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
