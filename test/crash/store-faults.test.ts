/**
 * The store failing under the gate:
 * - PostgreSQL stopped immediately (pg_ctl stop -m immediate) while the
 *   append that makes the effect DISPATCHED waits (its first commit: PROPOSED,
 *   AUTHORIZED, DISPATCHED): the gate must not dispatch, must say why; after
 *   the restart nothing of it is journaled, and the same submit applies it
 *   exactly once;
 * - a full disk under the SQLite journal (a file-size limit on the process,
 *   SIGXFSZ ignored so the write fails with EFBIG): a clear error, nothing
 *   dispatched, the journal intact, and recovery finishing it once the disk
 *   has room.
 * Ground truth is the target's own count, never the journal.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Gate } from '../../src/core/gate.js'
import { toEffect } from '../../src/core/effect.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import { HttpTarget } from '../../src/core/targets/http/http-target.js'
import { CountingTarget } from '../helpers/counting-target.js'
import { startOwnPostgres, type OwnPostgres } from '../helpers/own-postgres.js'
import { verifyJournal } from './invariants.js'
import { LedgerService } from './ledger-service.js'

describe('PostgreSQL stopped immediately during the DISPATCHED append', () => {
  let server: OwnPostgres
  beforeAll(async () => {
    server = await startOwnPostgres()
  })
  afterAll(() => server?.close())

  it('dispatches nothing, says the store is unavailable, and recovers exactly once after the restart', async () => {
    const config = { kind: 'postgres' as const, url: server.url, schema: 'interlock' }
    await install(config)
    const target = new CountingTarget('svc', 1)
    const input = { thread: 'pg-stop', target: 'svc', action: 'charge', args: { amount: '5.00' } }
    const id = toEffect(input).id
    // Right before the DISPATCHED append, another session locks the journal's head row,
    // so the append is waiting inside the server when the server goes.
    const locker = new pg.Client({ connectionString: server.url })
    locker.on('error', () => {})
    await locker.connect()
    const store = await openStore(config)
    const gate = new Gate({ store, targets: [target], retry: { maxAttempts: 2, backoffMs: 1 } })
    // Another effect first, so the journal's head row exists to be locked.
    expect(await gate.submit({ ...input, args: { amount: '1.00' } })).toMatchObject({ status: 'committed' })
    target.validatePremises = async () => {
      await locker.query('BEGIN')
      await locker.query(`SELECT 1 FROM interlock.journals WHERE journal = $1 FOR UPDATE`, [input.thread])
      return []
    }
    const submitted = gate.submit(input)
    submitted.catch(() => {})
    for (let i = 0; ; i++) {
      const r = await locker.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'`)
      if (r.rows[0].n > 0) break
      if (i > 1000) throw new Error(`the append never waited on the lock: ${JSON.stringify(await Promise.race([submitted.catch((e) => String(e)), 'pending']))}`)
      await new Promise((res) => setTimeout(res, 10))
    }
    server.stopImmediately()

    const err = await submitted.then(() => null, (e: unknown) => e as { code?: string; message: string; hint?: string })
    expect(err, 'submit must fail when DISPATCHED cannot be made durable').not.toBeNull()
    expect(err!.code).toBe('E_STORE_UNAVAILABLE')
    expect(err!.message).toMatch(/PostgreSQL schema "interlock"/)
    expect(target.calls.get(id) ?? 0).toBe(0)
    await store.close().catch(() => {})
    await locker.end().catch(() => {})

    await server.start()
    const after = await openStore(config)
    try {
      // The whole first commit was lost with the server: nothing of the effect is journaled, nothing to recover.
      expect(await after.get(id)).toBeUndefined()
      expect(await verifyJournal(after)).toEqual([])
      const plain = new CountingTarget('svc', 1)
      const again = new Gate({ store: after, targets: [plain] })
      expect((await again.recover()).inFlight).toBe(0)
      expect(await again.submit(input)).toMatchObject({ status: 'committed', effectId: id })
      expect(plain.count(id)).toBe(1)
      expect(await verifyJournal(after)).toEqual([])
    } finally {
      await after.close()
    }
  })
})

describe('a full disk under the SQLite journal', () => {
  let dir: string
  let service: LedgerService
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-disk-'))
    service = await new LedgerService().start()
  })
  afterAll(async () => {
    await service?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /** The child under `ulimit -f` (1 KiB blocks), SIGXFSZ ignored so writes past it fail with EFBIG. */
  function submitUnderLimit(journal: string, limitKiB: number, size: number): Promise<{ outcome?: { status: string }; error?: { code: string; message: string; hint?: string } }> {
    const script = `trap '' XFSZ; ulimit -f ${limitKiB}; exec "$0" --import tsx test/crash/disk-child.ts "$@"`
    return new Promise((resolve, reject) => {
      const child = spawn('bash', ['-c', script, process.execPath, journal, `${service.url}/idempotent`, String(size)], {
        cwd: process.cwd(),
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      let err = ''
      child.stdout.on('data', (d: Buffer) => (out += d.toString()))
      child.stderr.on('data', (d: Buffer) => (err += d.toString()))
      child.on('close', (code, signal) => {
        const line = out.trim().split('\n').at(-1)
        if (!line) return reject(new Error(`the child printed nothing (exit ${code}, ${signal}): ${err}`))
        resolve(JSON.parse(line))
      })
    })
  }

  it('refuses clearly, sends nothing, keeps the journal intact, and recovers once there is room', async () => {
    const size = 256 * 1024
    const effectId = toEffect({ thread: 'disk', target: 'svc', action: 'upload', args: { blob: 'x'.repeat(size) } }).id
    const seen: string[] = []
    // From a limit the first record cannot fit under to one the whole lifecycle fits under:
    // the disk fills at a different record each time, the gate must hold at every one.
    for (const limitKiB of [128, 384, 640, 896, 1152, 1408, 4096]) {
      const journal = join(dir, `journal-${limitKiB}.db`)
      await install({ kind: 'sqlite', path: journal })
      const r = await submitUnderLimit(journal, limitKiB, size)
      const store = await openStore({ kind: 'sqlite', path: journal })
      try {
        const state = (await store.get(effectId))?.state ?? '(none)'
        seen.push(`${limitKiB} KiB: ${r.error ? r.error.code : r.outcome!.status} at ${state}`)
        const applied = service.count(effectId)
        if (r.error) {
          expect(r.error.code).toBe('E_STORE_UNAVAILABLE')
          expect(r.error.message).toMatch(/SQLITE_(FULL|IOERR)/)
          expect(r.error.hint).toMatch(/disk/)
          // Nothing reaches the target unless DISPATCHED is durable.
          if (state !== 'DISPATCHED') expect(applied).toBe(0)
        }
        expect(await verifyJournal(store)).toEqual([])
        // Room again: recovery finishes it, exactly once.
        await new Gate({ store, targets: [new HttpTarget('svc', { tier: 1, url: `${service.url}/idempotent` })] }).recover()
        expect((await store.get(effectId))?.state ?? '(none)').toMatch(/COMMITTED|\(none\)/)
        expect(service.count(effectId)).toBeLessThanOrEqual(1)
        expect(await verifyJournal(store)).toEqual([])
      } finally {
        await store.close()
      }
      service.applications.clear()
    }
    console.log(seen.join('\n'))
    // The sweep must have hit the disk limit at the first commit (PROPOSED, AUTHORIZED, DISPATCHED), which
    // then left nothing of the effect, not one record of it.
    expect(seen.some((s) => /E_STORE_UNAVAILABLE at \(none\)/.test(s)), seen.join('\n')).toBe(true)
    expect(seen.some((s) => /at (PROPOSED|AUTHORIZED)$/.test(s)), seen.join('\n')).toBe(false)
    expect(seen.some((s) => /committed at COMMITTED/.test(s)), seen.join('\n')).toBe(true)
  }, 120_000)
})
