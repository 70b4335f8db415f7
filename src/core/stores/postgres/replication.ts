/**
 * Whether the store's commits survive a failover. Interlock's "once" rests on
 * DISPATCHED being durable before anything is sent; with asynchronous
 * replication the commits of the last moments before the primary dies may
 * never reach the standby that is promoted, and an effect whose DISPATCHED
 * was lost is sent again by the next relay. So `interlock check` and
 * `interlock relay` read the server's settings at start:
 * - a standby (in recovery): not where effects are written;
 * - a primary with no standby and none named: a single server, nothing to
 *   fail over to: fine;
 * - a primary whose commits wait for a standby (synchronous_standby_names set
 *   and synchronous_commit on, remote_write or remote_apply): fine;
 * - any other primary with standbys: asynchronous, refused unless
 *   `[store] replication = "async-accepted"`.
 * A managed service that fails over to a standby this role cannot see
 * (pg_stat_replication empty) reads as a single server: docs/dbas.md says so.
 */
import type { PostgresStoreConfig } from '../../config/types.js'
import { ConfigError } from '../../errors.js'
import { connectClient, describePostgres } from './connect.js'

export interface ReplicationFacts {
  inRecovery: boolean
  /** Standbys streaming from this server (pg_stat_replication rows). */
  standbys: number
  synchronousStandbyNames: string
  synchronousCommit: string
}

export interface Queryable {
  query(sql: string): Promise<{ rows: Record<string, unknown>[] }>
}

export async function readReplication(client: Queryable): Promise<ReplicationFacts> {
  const { rows } = await client.query(
    `SELECT pg_is_in_recovery() AS in_recovery, (SELECT count(*) FROM pg_stat_replication)::int AS standbys, current_setting('synchronous_standby_names') AS names, current_setting('synchronous_commit') AS commit`,
  )
  const r = rows[0]!
  return { inRecovery: r.in_recovery === true, standbys: Number(r.standbys), synchronousStandbyNames: String(r.names ?? ''), synchronousCommit: String(r.commit ?? '') }
}

export interface ReplicationVerdict {
  ok: boolean
  /** ok, but only because the operator accepted the risk. */
  accepted?: boolean
  detail: string
  fix?: string
}

const WAITS = new Set(['on', 'remote_write', 'remote_apply'])

export function replicationVerdict(f: ReplicationFacts, accepted: boolean): ReplicationVerdict {
  if (f.inRecovery) {
    return { ok: false, detail: 'the server is a standby (in recovery): effects are journaled on the primary', fix: 'Point [store] url at the primary, or at every host with target_session_attrs=read-write so the client finds it.' }
  }
  const names = f.synchronousStandbyNames.trim()
  const synchronous = names !== '' && WAITS.has(f.synchronousCommit)
  if (synchronous) return { ok: true, detail: `commits wait for a standby (synchronous_standby_names = '${names}', synchronous_commit = ${f.synchronousCommit}); ${f.standbys} streaming` }
  if (f.standbys === 0 && names === '') return { ok: true, detail: 'a single server: no standby streams from it, none is named (nothing to fail over to)' }
  const why =
    names === ''
      ? `${f.standbys} standby${f.standbys === 1 ? '' : 's'} stream${f.standbys === 1 ? 's' : ''} from it asynchronously (synchronous_standby_names is empty)`
      : `synchronous_commit = ${f.synchronousCommit}: commits do not wait for the standbys named (${names})`
  const risk = 'a standby promoted after the primary dies may lack the last DISPATCHED records, and their effects would be sent again'
  if (accepted) return { ok: true, accepted: true, detail: `${why}: ${risk}; accepted by [store] replication = "async-accepted"` }
  return {
    ok: false,
    detail: `${why}: ${risk}`,
    fix: 'Make commits synchronous (synchronous_standby_names naming the standby, synchronous_commit = on or remote_apply; docs/dbas.md, "Failover"), or accept the risk with [store] replication = "async-accepted".',
  }
}

/**
 * For `interlock relay` at start: the verdict on the store's server, thrown
 * as a ConfigError (exit 3) when it is not ok, so no relay sends from a store
 * whose failover could lose what it journals.
 */
export async function requireSafeReplication(store: PostgresStoreConfig): Promise<ReplicationVerdict> {
  const where = describePostgres(store.url, store.schema)
  const client = await connectClient(store.url, where, {})
  let verdict: ReplicationVerdict
  try {
    verdict = replicationVerdict(await readReplication(client), store.replication === 'async-accepted')
  } finally {
    await client.end().catch(() => {})
  }
  if (!verdict.ok) throw new ConfigError(`the relay will not send from ${where}: ${verdict.detail}`, [`store.replication: ${verdict.detail}`], { hint: verdict.fix, context: { store: where } })
  return verdict
}
