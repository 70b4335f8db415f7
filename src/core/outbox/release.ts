/**
 * An operator releases or denies a HELD effect (see journal-statements.ts for
 * where each signed statement is journaled).
 *
 * Release: sign, append HELD → HELD with the signature, then read the
 * effect's releases back and ask releaseQuorum; when it is met, append
 * HELD → AUTHORIZED carrying every release that counted. Appends are
 * serialised by the store, so of two operators releasing at once the later
 * one always sees both signatures: the quorum is never missed, no signature
 * is lost, and if both try to authorize, compare-and-set lets one win.
 *
 * What is signed is the digest of the effect as its PROPOSED record holds it,
 * the args and premises a relay will send (relay/send-check.ts); an effect
 * whose effects row disagrees with its journal is not signed at all.
 */
import type { JsonObject } from '../canonical-json.js'
import { crashPoint } from '../crash-points.js'
import { effectDigest } from '../crypto/digest.js'
import { newNonce, signStatement } from '../crypto/sign.js'
import { signedJson, type DenialStatement, type ReleaseStatement, type Signed } from '../crypto/statements.js'
import { ConflictError, IntegrityError } from '../errors.js'
import type { State } from '../lifecycle.js'
import type { JournalRecord } from '../stores/store.js'
import type { Effect, EffectSnapshot } from '../effect.js'
import { heldRule, releasesOf } from './journal-statements.js'
import { journalView } from './journaled-effect.js'
import { assertTrusted, effectIn, type OperatorContext } from './operator-context.js'
import { releaseQuorum } from './release-check.js'

export interface ReleaseResult {
  effectId: string
  /** Where the effect stands after this release: HELD (quorum not yet met) or AUTHORIZED. */
  state: State
  operator: string
  release: Signed<ReleaseStatement>
  quorum: { have: number; need: number; signers: string[] }
  /** Why earlier releases do not count, or why the quorum is not met yet. */
  reasons: string[]
}

export async function releaseEffect(ctx: OperatorContext, effectId: string): Promise<ReleaseResult> {
  assertTrusted(ctx)
  const row = await effectIn(ctx.store, effectId, ['HELD'], 'released')
  const history = await ctx.store.history(effectId)
  const effect = journaledEffect(row, history)
  const held = heldRule(history)
  if (!held) throw new IntegrityError(`effect ${effectId} is HELD but its journal names no rule that held it`)
  const rule = ctx.policy.rule(held.rule)
  if (!rule) {
    throw new ConflictError(`effect ${effectId} is held by rule "${held.rule}", which interlock.toml no longer declares`, {
      hint: 'Restore the rule to release it, or deny it with `interlock outbox release --deny`.',
      context: { effectId, rule: held.rule },
    })
  }
  const now = ctx.clock.now()
  const statement: ReleaseStatement = {
    kind: 'release',
    effectId,
    digest: effectDigest(effect),
    operator: ctx.key.name,
    rule: rule.name,
    signedAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + rule.releaseTtlMs).toISOString(),
    nonce: newNonce(),
  }
  const release = signStatement(statement, ctx.key.seed)
  const data: JsonObject = { rule: held.rule, release: signedJson(release) }
  if (held.reason !== undefined) data.reason = held.reason
  const [r] = await ctx.store.append([{ effectId, from: 'HELD', to: 'HELD', data }])
  if (!r!.ok) throw movedOn(effectId, r!.current?.state)
  // A crash here, with the quorum complete, leaves the effect HELD: recovery authorizes it (recorded-quorum.ts).
  await crashPoint('after-release', effectId)

  const q = releaseQuorum({ effect, rule: held.rule }, releasesOf(await ctx.store.history(effectId)), ctx.operators, ctx.policy, ctx.clock.now())
  let state: State = 'HELD'
  if (q.ok) {
    const authorized: JsonObject = { rule: held.rule, releases: q.accepted.map(signedJson), signers: q.signers }
    const [a] = await ctx.store.append([{ effectId, from: 'HELD', to: 'AUTHORIZED', data: authorized }])
    // Lost the compare-and-set: another operator's release authorized it first, with the same quorum.
    state = a!.ok ? 'AUTHORIZED' : (a!.current?.state ?? 'HELD')
  }
  return {
    effectId,
    state,
    operator: ctx.key.name,
    release,
    quorum: { have: q.signers.length, need: q.needed, signers: q.signers },
    reasons: q.ok ? q.reasons.filter((x) => !x.startsWith('below quorum')) : q.reasons,
  }
}

export interface DenyResult {
  effectId: string
  state: 'REJECTED'
  operator: string
  denial: Signed<DenialStatement>
  record: JournalRecord
}

/** One operator's signed refusal rejects a HELD effect. */
export async function denyEffect(ctx: OperatorContext, effectId: string, reason: string): Promise<DenyResult> {
  assertTrusted(ctx)
  const row = await effectIn(ctx.store, effectId, ['HELD'], 'denied')
  const history = await ctx.store.history(effectId)
  const held = heldRule(history)
  // A denial of an effect whose row was tampered with is still a denial: it names the journaled effect when there is one.
  const view = journalView(row, history)
  const statement: DenialStatement = {
    kind: 'denial',
    effectId,
    digest: effectDigest(view.ok ? view.effect : row.effect),
    operator: ctx.key.name,
    reason,
    signedAt: ctx.clock.now().toISOString(),
    nonce: newNonce(),
  }
  const denial = signStatement(statement, ctx.key.seed)
  const data: JsonObject = { violations: [`denied by operator ${ctx.key.name}: ${reason}`], denial: signedJson(denial) }
  if (held) data.rule = held.rule
  const [r] = await ctx.store.append([{ effectId, from: 'HELD', to: 'REJECTED', data }])
  if (!r!.ok) throw movedOn(effectId, r!.current?.state)
  // One record both journals the denial and applies it: nothing is left for recovery however the process ends.
  await crashPoint('after-rejected', effectId)
  return { effectId, state: 'REJECTED', operator: ctx.key.name, denial, record: r!.record }
}

/** The journaled effect an operator signs; refused when the row that `outbox show` and the relays read departs from it. */
function journaledEffect(row: EffectSnapshot, history: readonly JournalRecord[]): Effect {
  const view = journalView(row, history)
  if (!view.ok) throw new IntegrityError(`effect ${row.effect.id} cannot be released: ${view.reason}`, { context: { effectId: row.effect.id } })
  if (view.rowDisagrees.length > 0) {
    throw new IntegrityError(`effect ${row.effect.id} cannot be released: its effects row disagrees with its journal (${view.rowDisagrees.join(', ')})`, {
      hint: 'Someone edited the effects table behind the journal. Nothing was signed; deny it with `interlock outbox release --deny`, and find out who.',
      context: { effectId: row.effect.id, fields: view.rowDisagrees },
    })
  }
  return view.effect
}

function movedOn(effectId: string, state: State | undefined): ConflictError {
  return new ConflictError(`effect ${effectId} moved on while being signed: it is now ${state ?? 'gone'}`, {
    hint: `See what happened with \`interlock outbox show ${effectId}\`.`,
    context: { effectId, state },
  })
}
