/**
 * Appends under agent access (`[store] access = "agent"`): proposals only,
 * through the schema's propose() function (schemas/postgres/0001_baseline.sql),
 * which writes each new effect's PROPOSED record with its owner's rights. The
 * agent's database role holds no privilege on any table, so this is the only
 * write it can make; the checks here only turn a caller's mistake into a
 * clear error before anything is sent.
 *
 * The database stamps the record's time (the function uses its own clock),
 * so the record comes back with the time it was written under.
 */
import type pg from 'pg'
import { StoreError } from '../../errors.js'
import { requestTexts } from '../append-plan.js'
import type { AppendRequest, AppendResult } from '../store.js'
import { assertAnsweredInOrder, writtenRecord, type BatchAnswerRow } from './batch-answer.js'
import { toSnapshot, type EffectRow } from './rows.js'
import type { PgStatements } from './statements.js'

/** A written proposal comes back with the database's time. */
interface ProposeRow extends BatchAnswerRow {
  at: string | null
}

/** Refuses (StoreError, nothing sent) any request but a plain proposal: an agent cannot move an effect. */
export function assertProposals(requests: readonly AppendRequest[], where: string): void {
  for (const r of requests) {
    const plain = r.from === null && r.to === 'PROPOSED' && r.lease === undefined && Object.keys(r.data).every((k) => k === 'effect' || k === 'tier')
    if (!plain) {
      throw new StoreError(
        `${where} is opened with agent access, which can only propose effects: effect ${r.effectId} ${r.from ?? '(new)'} → ${r.to}${r.lease ? ' under a lease' : ''} is not a proposal`,
        {
          hint: 'Moving effects past PROPOSED is for the relay and the operators, each with [store] access = "full" (the default) and its own database role (docs/dbas.md, "Database roles and grants").',
          context: { effectId: r.effectId, from: r.from, to: r.to },
        },
      )
    }
  }
}

export async function proposeBatch(client: pg.ClientBase, sql: PgStatements, requests: readonly AppendRequest[]): Promise<AppendResult[]> {
  const texts = requests.map(requestTexts)
  // A named statement: each pooled connection parses it once.
  const { rows } = await client.query<ProposeRow>({
    name: 'interlock_propose',
    text: sql.propose,
    values: [
      requests.map((r) => r.effectId),
      requests.map((r) => r.effect!.thread),
      requests.map((r) => r.effect!.target),
      requests.map((r) => r.effect!.action),
      requests.map((r) => r.tier!),
      texts.map((t) => t.effectText!),
    ],
  })
  assertAnsweredInOrder('propose', 'proposal', rows, requests.length)
  const results: AppendResult[] = []
  for (const [i, row] of rows.entries()) {
    const req = requests[i]!
    if (!row.ok) {
      // It exists and is this role's (another role's raises): read it as it stands now, through the agent's view.
      const current = (await client.query<EffectRow>(sql.effect, [req.effectId])).rows[0]
      results.push({ ok: false, current: current ? toSnapshot(current) : null })
      continue
    }
    results.push({ ok: true, record: writtenRecord(row, { effectId: req.effectId, state: 'PROPOSED', at: row.at!, data: texts[i]!.data }) })
  }
  return results
}
