/**
 * Which notary an effect was sent through, as its journal says, and whether
 * the target built from today's config may be asked about it
 * (docs/notary.md, "A notary the config no longer names").
 *
 * Each DISPATCHED record written through a notarized target carries
 * `notary`: the notary's URL as journaled (scrubbed like any journaled
 * value). It names *where*, never *whom to believe*: the keys a notary's
 * answer must be signed by, and the agent key that signs an abort, come only
 * from the config. So an effect found DISPATCHED is asked about only through
 * a target that sends through that same notary; otherwise it goes AMBIGUOUS,
 * its reason naming the notary and what to restore. A notary the journal
 * names but the config does not is never asked: its answer could only be
 * believed on trust the config has withdrawn, and an abort written there
 * would be followed by a resend through the bare target.
 *
 * Journals written before the key existed name no notary. A notarized
 * target journaled its effects at tier 2 (notarized.ts), so an effect
 * journaled at tier 2 whose target can no longer be asked (no query: a
 * notary or a query_url removed, a tier lowered) goes AMBIGUOUS as well,
 * instead of staying DISPATCHED behind a query that does not exist.
 */
import type { JsonObject } from '../canonical-json.js'
import type { EffectSnapshot } from '../effect.js'
import type { EffectTarget } from '../targets/target.js'

/** The DISPATCHED record's data for an effect sent through `target`. */
export function dispatchedData(target: EffectTarget): JsonObject {
  return target.notary === undefined ? {} : { notary: target.notary }
}

/** The notary the effect's DISPATCHED record names, if any. */
export function notaryOf(snap: Pick<EffectSnapshot, 'detail'>): string | undefined {
  const n = snap.detail?.notary
  return typeof n === 'string' ? n : undefined
}

export interface CannotAsk {
  /** The AMBIGUOUS record's reason: what is known, and what an operator does next. */
  reason: string
  data: JsonObject
}

/**
 * Why an effect that may have landed cannot be asked about through
 * `target`, or undefined when it can be (or, at tiers 1 and 3, need not be).
 */
export function cannotAsk(snap: EffectSnapshot, target: EffectTarget): CannotAsk | undefined {
  const sent = notaryOf(snap)
  const id = snap.effect.id
  const name = target.name
  const redispatch = `then \`interlock outbox resolve ${id} --redispatch\`: sent through the notary again, an attempt the service performed is answered from the notary's record, not sent again`
  if (sent !== undefined && target.notary === undefined) {
    return {
      reason:
        `sent through the notary at ${sent} (its DISPATCHED record says so), but target ${name} no longer names a notary in its config: ` +
        `the notary is not asked on trust the config has withdrawn, and the bare tier-${target.tier} target cannot say whether it landed. ` +
        `Restore notary = "${sent}" and its notary_services on [targets.${name}], ${redispatch}`,
      data: { notary: sent },
    }
  }
  if (sent !== undefined && target.notary !== sent) {
    return {
      reason:
        `sent through the notary at ${sent} (its DISPATCHED record says so), but target ${name} now names the notary at ${target.notary}, ` +
        `which holds nothing of it: asked there, it would be aborted and sent again. ` +
        `Restore notary = "${sent}" on [targets.${name}] until no effect sent through it is in flight, ${redispatch}`,
      data: { notary: sent, configured: target.notary ?? null },
    }
  }
  if (snap.tier === 2 && typeof target.query !== 'function') {
    return {
      reason:
        `journaled at tier 2 (its target could be asked whether it happened, by a query or through a notary), but target ${name} as configured now cannot be asked (tier ${target.tier}): not guessing. ` +
        `If it was sent through a notary, restore notary = "<url>" and notary_services on [targets.${name}], ${redispatch}; otherwise check the service and resolve it with --applied or --not-applied`,
      data: {},
    }
  }
  return undefined
}
