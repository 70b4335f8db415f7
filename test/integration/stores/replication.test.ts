/**
 * A failover must lose nothing the journal holds (issue: PostgreSQL
 * failover): `interlock check` and `interlock relay` read the server's
 * replication settings at start, on a real primary with a real streaming
 * standby (Debian's PostgreSQL 15): asynchronous is refused unless
 * `[store] replication = "async-accepted"`, synchronous passes, a single
 * server passes, a standby is no place to journal.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { generateKeyPair, writeKeyFile } from '../../../src/core/crypto/keys.js'
import { readReplication, replicationVerdict, type ReplicationFacts } from '../../../src/core/stores/postgres/replication.js'
import { assertCliBuilt, interlock } from '../../helpers/cli.js'
import { debianPostgresMissing, startReplicatedPostgres, type ReplicatedPostgres } from '../../helpers/replicated-postgres.js'
import { relayReady, startRelayProc } from '../../helpers/relay-procs.js'

async function facts(url: string): Promise<ReplicationFacts> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return await readReplication(c)
  } finally {
    await c.end()
  }
}

describe('the verdict', () => {
  const primary = (more: Partial<ReplicationFacts>): ReplicationFacts => ({ inRecovery: false, standbys: 1, synchronousStandbyNames: '', synchronousCommit: 'on', ...more })
  it.each([
    [primary({ standbys: 0 }), false, true],
    [primary({}), false, false],
    [primary({}), true, true],
    [primary({ synchronousStandbyNames: 'standby1' }), false, true],
    [primary({ synchronousStandbyNames: 'standby1', synchronousCommit: 'remote_apply' }), false, true],
    [primary({ synchronousStandbyNames: 'standby1', synchronousCommit: 'local' }), false, false],
    [primary({ synchronousStandbyNames: 'standby1', synchronousCommit: 'off' }), false, false],
    [primary({ inRecovery: true }), true, false],
  ])('%j, accepted %s: ok %s', (f, accepted, ok) => {
    expect(replicationVerdict(f, accepted).ok).toBe(ok)
  })
})

const missing = debianPostgresMissing()

describe('on real servers', { timeout: 120_000 }, () => {
  let async: ReplicatedPostgres
  let sync: ReplicatedPostgres
  const dirs: string[] = []

  beforeAll(async () => {
    if (missing) throw new Error(missing)
    assertCliBuilt()
    async = await startReplicatedPostgres({ sync: false })
    sync = await startReplicatedPostgres({ sync: true })
  })
  afterAll(async () => {
    await async?.stop()
    await sync?.stop()
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })

  it('reads each server for what it is: asynchronous, synchronous, a standby, a single server', async () => {
    expect(replicationVerdict(await facts(async.primaryUrl), false)).toMatchObject({ ok: false, detail: expect.stringContaining('1 standby streams from it asynchronously (synchronous_standby_names is empty)') })
    expect(replicationVerdict(await facts(async.primaryUrl), true)).toMatchObject({ ok: true, accepted: true })
    expect(replicationVerdict(await facts(sync.primaryUrl), false)).toMatchObject({ ok: true, detail: expect.stringContaining("synchronous_standby_names = 'node2'") })
    expect(replicationVerdict(await facts(async.standbyUrl), true)).toMatchObject({ ok: false, detail: expect.stringContaining('a standby (in recovery)') })
    // The run's own server: nothing streams from it.
    expect(replicationVerdict(await facts(inject('pgUrl')), false)).toMatchObject({ ok: true, detail: expect.stringContaining('a single server') })
  })

  function project(url: string, more = ''): string {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-replication-'))
    dirs.push(cwd)
    writeKeyFile(join(cwd, 'relay.key'), generateKeyPair('relay', 'relay-r'))
    writeFileSync(join(cwd, 'interlock.toml'), `[store]\nkind = "postgres"\nurl = "${url}"\n${more}\n[relay]\nkey = "relay.key"\n`)
    return cwd
  }

  it('asynchronous: check fails the store.replication row, the relay refuses to start (exit 3) naming why and what to do', async () => {
    const cwd = project(async.primaryUrl)
    const check = await interlock(['check', '--only', 'store', '--json'], { cwd })
    const row = (JSON.parse(check.stdout) as { checks: { id: string; status: string; detail: string }[] }).checks.find((r) => r.id === 'store.replication')
    expect(row).toMatchObject({ status: 'fail' })
    expect(check.code).not.toBe(0)
    const relay = await interlock(['relay'], { cwd })
    expect(relay.code).toBe(3)
    expect(relay.stderr).toContain('the relay will not send from')
    expect(relay.stderr).toContain('a standby promoted after the primary dies may lack the last DISPATCHED records')
    expect(relay.stderr).toContain('replication = "async-accepted"')
  })

  it('asynchronous, accepted: check warns, the relay starts and says so once', async () => {
    const cwd = project(async.primaryUrl, 'replication = "async-accepted"\n')
    expect((await interlock(['install'], { cwd })).code).toBe(0)
    const check = await interlock(['check', '--only', 'store', '--json'], { cwd })
    expect((JSON.parse(check.stdout) as { checks: { id: string; status: string }[] }).checks.find((r) => r.id === 'store.replication')?.status).toBe('warn')
    const relay = startRelayProc('relay-r', [], cwd)
    try {
      await relayReady(relay)
      expect(relay.stderr.match(/relay: warning: .*accepted by \[store\] replication = "async-accepted"/g)).toHaveLength(1)
    } finally {
      relay.child.kill('SIGTERM')
      await relay.exited
    }
  })

  it('synchronous: check passes, the relay starts', async () => {
    const cwd = project(sync.primaryUrl)
    expect((await interlock(['install'], { cwd })).code).toBe(0)
    const check = await interlock(['check', '--only', 'store', '--json'], { cwd })
    expect((JSON.parse(check.stdout) as { checks: { id: string; status: string }[] }).checks.find((r) => r.id === 'store.replication')?.status).toBe('pass')
    const relay = startRelayProc('relay-r', [], cwd)
    try {
      await relayReady(relay)
      expect(relay.stderr).not.toContain('warning')
    } finally {
      relay.child.kill('SIGTERM')
      await relay.exited
    }
  })
})
