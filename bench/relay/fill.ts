/**
 * Fills each system with `n` ready no-op items before the clock starts:
 * Interlock effects journaled PROPOSED (as `Outbox.submit` leaves them: the
 * relay authorizes), pg-boss jobs, graphile-worker jobs (DBOS's workflows:
 * dbos.ts). Bulk paths for all, so filling is not what is measured.
 */
import pg from 'pg'
import { toEffect } from '../../src/core/effect.js'
import { proposal } from '../../src/core/gate-context.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import type { AppendRequest } from '../../src/core/stores/store.js'

/** Effects are spread over this many agent threads (journals), as many agents would submit them. */
export const THREADS = 1000

export async function fillInterlock(url: string, n: number): Promise<void> {
  await install({ kind: 'postgres', url, schema: 'interlock' })
  const store = await openStore({ kind: 'postgres', url, schema: 'interlock' }, { groupCommit: false })
  try {
    for (let i = 0; i < n; i += 1000) {
      const requests: AppendRequest[] = []
      for (let j = i; j < Math.min(n, i + 1000); j++) {
        const effect = toEffect({ thread: `agent-${j % THREADS}`, target: 'noop', action: 'ping', args: { j } })
        requests.push({ effectId: effect.id, from: null, to: 'PROPOSED', data: proposal(effect, 1), effect, tier: 1 })
      }
      await store.append(requests)
    }
  } finally {
    await store.close()
  }
}

export async function fillPgBoss(url: string, n: number): Promise<void> {
  const { PgBoss } = await import('pg-boss')
  const boss = new PgBoss({ connectionString: url, supervise: false, schedule: false })
  boss.on('error', () => {})
  await boss.start()
  await boss.createQueue('bench')
  for (let i = 0; i < n; i += 1000) {
    await boss.insert('bench', Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({ data: { j: i + k } })))
  }
  await boss.stop({ graceful: false, close: true })
}

export async function fillGraphile(url: string, n: number): Promise<void> {
  const { runMigrations, Logger } = await import('graphile-worker')
  await runMigrations({ connectionString: url, logger: new Logger(() => () => {}) })
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    for (let i = 0; i < n; i += 10_000) {
      await client.query(
        `SELECT graphile_worker.add_jobs(array_agg(json_populate_record(null::graphile_worker.job_spec,
           json_build_object('identifier', 'noop', 'payload', json_build_object('j', g)))))
         FROM generate_series($1::int, $2::int) AS g`,
        [i, Math.min(n, i + 10_000) - 1],
      )
    }
  } finally {
    await client.end()
  }
}

/** Items not yet done, per system. */
export const REMAINING: Record<string, string> = {
  interlock: `SELECT count(*)::int AS n FROM interlock.effects WHERE state IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED')`,
  pgboss: `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'bench' AND state IN ('created', 'retry', 'active')`,
  graphile: `SELECT count(*)::int AS n FROM graphile_worker.jobs`,
  dbos: `SELECT count(*)::int AS n FROM dbos.workflow_status WHERE status IN ('ENQUEUED', 'PENDING')`,
}
