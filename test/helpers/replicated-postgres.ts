/**
 * A real PostgreSQL primary with a streaming standby, from Debian's
 * PostgreSQL 15 binaries (/usr/lib/postgresql/15/bin; `.ci/run` installs
 * them when absent), on loopback ports the OS picks, data under the OS temp
 * folder. As root, every server program runs as the `postgres` system user,
 * which owns the data. `sync` names the standby in synchronous_standby_names;
 * otherwise it streams asynchronously. `stop()` stops both and removes the data.
 */
import { execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, rmSync, appendFileSync, writeFileSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { freePort } from './free-port.js'

export const PG15_BIN = '/usr/lib/postgresql/15/bin'

export interface ReplicatedPostgres {
  primaryUrl: string
  standbyUrl: string
  stop(): Promise<void>
}

export function debianPostgresMissing(): string | undefined {
  return existsSync(join(PG15_BIN, 'postgres')) ? undefined : `Debian's PostgreSQL 15 is not installed (${PG15_BIN}); apt-get install postgresql-15`
}

export async function startReplicatedPostgres(o: { sync: boolean }): Promise<ReplicatedPostgres> {
  const root = userInfo().uid === 0
  const dir = mkdtempSync(join(tmpdir(), 'interlock-replicated-'))
  if (root) {
    const { uid, gid } = postgresIds()
    chownSync(dir, uid, gid)
  }
  const run = (program: string, args: string[]) => {
    const cmd = join(PG15_BIN, program)
    return root ? execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { stdio: 'pipe', cwd: dir }) : execFileSync(cmd, args, { stdio: 'pipe', cwd: dir })
  }
  const primary = join(dir, 'primary')
  const standby = join(dir, 'standby')
  const [p1, p2] = [await freePort(), await freePort()]
  const started: string[] = []
  const stop = async () => {
    for (const d of started.reverse()) {
      try {
        run('pg_ctl', ['-D', d, '-m', 'immediate', 'stop'])
      } catch {}
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    run('initdb', ['-D', primary, '-U', 'postgres', '--auth=trust', '--no-sync'])
    appendFileSync(
      join(primary, 'postgresql.conf'),
      `\nport = ${p1}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nwal_level = replica\nmax_wal_senders = 5\nhot_standby = on\nfsync = off\nsynchronous_standby_names = '${o.sync ? 'standby1' : ''}'\n`,
    )
    writeFileSync(join(primary, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n')
    run('pg_ctl', ['-D', primary, '-l', join(dir, 'primary.log'), '-w', 'start'])
    started.push(primary)
    run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(p1), '-U', 'postgres', '-D', standby, '-R', '--no-sync'])
    appendFileSync(join(standby, 'postgresql.conf'), `\nport = ${p2}\n`)
    appendFileSync(join(standby, 'postgresql.auto.conf'), `\nprimary_conninfo = 'host=127.0.0.1 port=${p1} user=postgres application_name=standby1'\n`)
    run('pg_ctl', ['-D', standby, '-l', join(dir, 'standby.log'), '-w', 'start'])
    started.push(standby)
    const primaryUrl = `postgresql://postgres@127.0.0.1:${p1}/postgres`
    // Streaming, and (sync) counted as the synchronous standby, before anyone reads the settings.
    const end = Date.now() + 30_000
    for (;;) {
      const c = new pg.Client({ connectionString: primaryUrl })
      await c.connect()
      const { rows } = await c.query(`SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'`)
      await c.end()
      if (rows.length > 0 && (!o.sync || rows[0].sync_state === 'sync')) break
      if (Date.now() > end) throw new Error('the standby did not start streaming within 30 s')
      await new Promise((r) => setTimeout(r, 50))
    }
    return { primaryUrl, standbyUrl: `postgresql://postgres@127.0.0.1:${p2}/postgres`, stop }
  } catch (e) {
    await stop()
    throw e
  }
}

function postgresIds(): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
  return { uid, gid }
}
