/**
 * Submit's first commit. An effect no policy rule holds is checked against
 * its premises first, then PROPOSED, AUTHORIZED and DISPATCHED (or REJECTED)
 * are made durable as one commit, each its own record (Store.append's chain):
 * nothing leaves the process between them, so nothing is lost by not
 * stopping there. A crash before that commit leaves nothing journaled and
 * nothing sent, and the same submit later names the same effect. An effect a
 * rule holds keeps its separate commits: PROPOSED, then HELD (advance.ts).
 * Either way the commit's first record is the proposal: an effect journaled
 * before, by anyone, makes the whole commit lose, and its outcome is reported.
 */
import { inSpan } from './tracing/spans.js'
import { advance, checkedCommit } from './advance.js'
import { crashPoint, stateCrashPoint } from './crash-points.js'
import type { Effect, Tier } from './effect.js'
import { chain, proposal, type GateContext, type Moved, type Step } from './gate-context.js'
import { ConflictError } from './errors.js'
import { journalOutcome, type SubmitOutcome } from './outcome.js'
import type { AppendRequest } from './stores/store.js'

export async function proposeAndAdvance(ctx: GateContext, effect: Effect, tier: Tier): Promise<SubmitOutcome> {
  const proposed: AppendRequest = { effectId: effect.id, from: null, to: 'PROPOSED', data: proposal(effect, tier), effect, tier }
  const commit = (steps: Step[]) => proposeWith(ctx, proposed, steps)
  const t = ctx.policy.evaluate(effect, tier) ? await commit([]) : await checkedCommit(ctx, { effect }, [{ to: 'AUTHORIZED', data: {} }], commit)
  // Already journaled, by an earlier run or another process: where it stands.
  if (!t.moved) return t.current ? journalOutcome(t.current) : { status: 'in_flight', effectId: effect.id, state: 'PROPOSED' }
  return advance(ctx, t.snap, { recovering: false })
}

/** The proposal and `steps` chained to it, as one commit; then the crash point of the last. */
async function proposeWith(ctx: GateContext, proposed: AppendRequest, steps: Step[]): Promise<Moved | { moved: false; current: null }> {
  const effect = proposed.effect!
  const records = chain(proposed, steps)
  const results = await inSpan('interlock.propose', { 'interlock.records': records.length }, () => ctx.store.append(records))
  const [first, last] = [results[0]!, results.at(-1)!]
  if (!first.ok) return { moved: false, current: first.current }
  if (!last.ok) throw new ConflictError(`the store wrote part of the first commit of effect ${effect.id}; a chain is all or nothing`)
  await crashPoint(stateCrashPoint(last.record.state, steps.length > 1 ? steps.at(-2)!.to : 'PROPOSED'), effect.id)
  const r = last.record
  return { moved: true, snap: { effect, tier: proposed.tier!, state: r.state, seq: r.seq, detail: r.data, createdAt: first.record.at, updatedAt: r.at } }
}
