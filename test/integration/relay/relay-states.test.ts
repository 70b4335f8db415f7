/**
 * The `interlock relay` binary as an operator runs it: `--log-format json`
 * writes one JSON object per line on stderr (what journald and log shippers
 * take), and `interlock outbox status` tells a running relay from a stopped
 * one and from one killed without a word (gone), while the relays' own
 * heartbeats delete the rows of relays gone longer than
 * [relay] heartbeat_retention.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { interlock } from '../../helpers/cli.js'
import { startHttpService, type HttpService } from '../../helpers/http-service.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'
import { relayReady, startRelayProc, type RelayProc } from '../../helpers/relay-procs.js'
import { effectInputs, relayDeployment } from '../../helpers/relay-setup.js'

let service: HttpService
let db: TestDatabase
beforeAll(async () => {
  service = await startHttpService()
  db = await createTestDatabase()
})
afterAll(async () => {
  await service?.close()
  await db?.drop()
})

async function admin<T extends pg.QueryResultRow>(sql: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: db.url })
  await c.connect()
  try {
    return (await c.query<T>(sql)).rows
  } finally {
    await c.end()
  }
}

async function until(cond: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('relay states and JSON logs, through the binary', () => {
  it('outbox status shows running, stopped and gone relays; rows past the retention are deleted by a relay\'s heartbeat; --log-format json logs one object per line', async () => {
    const deploy = await relayDeployment(db.url, service, { relayConfig: 'heartbeat_retention = "1h"' })
    // Rows left by earlier runs under the default id (<host>-<pid>): one past the retention, one within it.
    await admin(`INSERT INTO interlock.relays (relay, info, started_at, last_seen) VALUES
      ('oldhost-4242', '{"state":"running","leaseMs":30000}', now() - interval '8 days', now() - interval '8 days'),
      ('oldhost-777', '{"state":"running","leaseMs":30000}', now() - interval '40 minutes', now() - interval '30 minutes')`)
    const args = ['--config', deploy.configFile, '--lease-ms', '300', '--poll-ms', '50', '--log-format', 'json']
    const procs: RelayProc[] = []
    const start = (id: string) => {
      const p = startRelayProc(id, args, deploy.dir)
      procs.push(p)
      return p
    }
    const status = async () => {
      const run = await interlock(['outbox', 'status', '--config', deploy.configFile, '--json'], { cwd: deploy.dir })
      expect(run.code, run.stderr).toBe(0)
      return JSON.parse(run.stdout) as { relays: { relay: string; state: string; lastSeenAgoMs: number; startedAt: string }[] }
    }
    try {
      const a = start('states-a')
      const b = start('states-b')
      await Promise.all([relayReady(a), relayReady(b)])
      const inputs = effectInputs(6, 2, 'states').map((e) => ({ ...e, target: 't1' }))
      const handles = await Promise.all(inputs.map((e) => deploy.outbox.submit(e)))
      for (const h of handles) expect((await h.result()).status).toBe('committed')
      await until(async () => (await admin(`SELECT 1 FROM interlock.relays WHERE relay = 'oldhost-4242'`)).length === 0, 10_000, 'the expired row to go')

      b.child.kill('SIGKILL')
      await b.exited
      a.child.kill('SIGTERM')
      expect((await a.exited).code, a.stderr).toBe(0)
      const c = start('states-c')
      await relayReady(c)
      // b is gone once three lease lengths (900 ms) passed without a heartbeat from it: waited for, not guessed.
      await until(async () => (await status()).relays.find((r) => r.relay === 'states-b')?.state === 'gone', 30_000, 'states-b to be shown gone')

      const relays = new Map((await status()).relays.map((r) => [r.relay, r]))
      expect([...relays.keys()].sort()).toEqual(['oldhost-777', 'states-a', 'states-b', 'states-c'])
      expect(relays.get('states-a')!.state).toBe('stopped')
      expect(relays.get('states-b')!.state).toBe('gone')
      expect(relays.get('states-b')!.lastSeenAgoMs).toBeGreaterThan(900)
      expect(relays.get('states-c')!.state).toBe('running')
      expect(relays.get('oldhost-777')).toMatchObject({ state: 'gone' })
      expect(relays.get('oldhost-777')!.lastSeenAgoMs).toBeGreaterThan(29 * 60_000)

      const human = await interlock(['outbox', 'status', '--config', deploy.configFile], { cwd: deploy.dir })
      expect(human.code, human.stderr).toBe(0)
      expect(human.stdout).toContain('Relays (1 running or draining, 3 stopped or gone):')
      for (const [id, state] of [['states-a', 'stopped'], ['states-b', 'gone'], ['states-c', 'running']]) {
        expect(human.stdout).toMatch(new RegExp(`^${id}\\s+${state}\\s`, 'm'))
      }

      c.child.kill('SIGTERM')
      expect((await c.exited).code, c.stderr).toBe(0)

      // Every stderr line of a relay run with --log-format json is one JSON object.
      const lines = a.stderr.trim().split('\n')
      const events = lines.map((l) => {
        const o = JSON.parse(l) as Record<string, unknown>
        expect(o).toMatchObject({ relay: 'states-a', level: expect.stringMatching(/^(info|warn|error)$/), event: expect.any(String), msg: expect.any(String) })
        expect(Number.isNaN(Date.parse(String(o.time)))).toBe(false)
        return o
      })
      expect(events[0]).toMatchObject({ event: 'started' })
      expect(events.at(-1)).toMatchObject({ event: 'stopped' })
      expect(events.some((e) => e.event === 'stopping')).toBe(true)
      // One outcome line per effect across both relays, even when a lease of 300 ms ran out under load and
      // the other relay took an effect over: the one whose record settled it logs it (relay-log.ts).
      const outcomes = [...events, ...b.stderr.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)].filter((e) => e.event === 'outcome')
      expect(outcomes.map((e) => e.effectId).sort()).toEqual(handles.map((h) => h.effectId).sort())
      for (const o of outcomes) expect(o).toMatchObject({ outcome: 'committed', state: 'COMMITTED', target: 't1' })
    } finally {
      for (const p of procs) p.child.kill('SIGKILL')
      await deploy.close()
    }
  })
})
