/**
 * `outbox prune` on PostgreSQL (schemas/postgres/0002_retention.sql): the
 * checkpoint stored once, then each journal cut in a transaction of its own,
 * so a large prune never holds one huge transaction open, and one that stops
 * half way leaves whole journals cut or untouched (the next run skips those
 * done: their base is at the cut already).
 *
 * Settled effects are no relay's, no operator's and no agent's to change, and
 * records are never updated: the deletes take row locks on rows nobody else
 * writes, and appends (which add records past the head) never wait for them.
 * Two prunes of one journal at once do the same deletes and write the same base.
 */
import type pg from 'pg'
import { IntegrityError } from '../../errors.js'
import { TERMINAL_STATES } from '../../lifecycle.js'
import type { JournalCut, PruneRequest, PruneResult } from '../store.js'
import { quoteSchema } from './identifier.js'
import { stateList } from './statements.js'

export async function prunePostgres(pool: pg.Pool, schema: string, request: PruneRequest, where: string): Promise<PruneResult> {
  const s = quoteSchema(schema)
  const c = request.checkpoint
  await pool.query(`INSERT INTO ${s}.checkpoints (digest, made_at, document) VALUES ($1, $2, $3::json) ON CONFLICT (digest) DO NOTHING`, [
    c.digest,
    c.madeAt,
    JSON.stringify(c.document),
  ])
  const result: PruneResult = { journals: 0, records: 0, effects: 0 }
  for (const cut of request.cuts) {
    const client = await pool.connect()
    let broken: Error | undefined
    try {
      await client.query('BEGIN')
      const done = await cutJournal(client, s, cut, c.digest, where)
      await client.query('COMMIT')
      if (done) {
        result.journals++
        result.records += done.records
        result.effects += done.effects
      }
    } catch (e) {
      await client.query('ROLLBACK').catch((r: Error) => (broken = r))
      throw e
    } finally {
      client.release(broken)
    }
  }
  return result
}

async function cutJournal(client: pg.PoolClient, s: string, cut: JournalCut, checkpoint: string, where: string): Promise<{ records: number; effects: number } | undefined> {
  const refuse = (why: string) =>
    new IntegrityError(`not pruned: journal ${JSON.stringify(cut.journal)} ${why} on ${where}`, {
      hint: 'The journal changed since it was verified, or was written behind Interlock. Run `interlock outbox verify`; nothing of this journal was deleted.',
      context: { journal: cut.journal, seq: cut.seq },
    })
  const base = await client.query<{ seq: string }>(`SELECT seq FROM ${s}.journal_bases WHERE journal = $1`, [cut.journal])
  if (base.rows[0] && Number(base.rows[0].seq) >= cut.seq) return undefined
  const at = await client.query<{ hash: string }>(`SELECT hash FROM ${s}.journal_records WHERE journal = $1 AND seq = $2`, [cut.journal, cut.seq])
  if (at.rows[0]?.hash !== cut.hash) throw refuse(at.rows[0] ? `record ${cut.seq} is not the one the checkpoint pins` : `has no record ${cut.seq}`)
  const others = await client.query<{ effect_id: string }>(
    `SELECT effect_id FROM ${s}.journal_records WHERE journal = $1 AND seq <= $2 AND NOT (effect_id = ANY($3::text[])) LIMIT 1`,
    [cut.journal, cut.seq, cut.effectIds],
  )
  if (others.rows[0]) throw refuse(`holds, at or before record ${cut.seq}, a record of effect ${others.rows[0].effect_id}, which is not among those pruned`)
  const open = await client.query<{ id: string }>(
    `SELECT id FROM ${s}.effects WHERE id = ANY($2::text[]) AND (journal <> $1 OR state NOT IN (${stateList(TERMINAL_STATES)}) OR last_seq > $3) LIMIT 1`,
    [cut.journal, cut.effectIds, cut.seq],
  )
  if (open.rows[0]) throw refuse(`lists effect ${open.rows[0].id} to prune, which is not settled in it at or before record ${cut.seq}`)
  const records = await client.query(`DELETE FROM ${s}.journal_records WHERE journal = $1 AND seq <= $2`, [cut.journal, cut.seq])
  const effects = await client.query(`DELETE FROM ${s}.effects WHERE id = ANY($1::text[])`, [cut.effectIds])
  await client.query(
    `INSERT INTO ${s}.journal_bases (journal, seq, hash, checkpoint) VALUES ($1, $2, $3, $4)
     ON CONFLICT (journal) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, checkpoint = excluded.checkpoint`,
    [cut.journal, cut.seq, cut.hash, checkpoint],
  )
  return { records: records.rowCount ?? 0, effects: effects.rowCount ?? 0 }
}
