/**
 * The effect digest an operator signs: what would be done and on what it
 * rests. Any change to the arguments or the premises changes it, so a release
 * signed for one effect never releases an altered one.
 *
 * digest = sha256hex(canonicalJson({ action, args, premises, target }))
 *
 * Over the exact text (canonicalJson never normalises a string), as journaled
 * and as sent: what an operator signs is byte for byte what goes out. Journals
 * written before args were kept exactly hold NFC text, whose digest is the
 * same either way, so their releases still verify.
 */
import { canonicalJson } from '../canonical-json.js'
import type { Effect } from '../effect.js'
import { sha256Hex } from '../hash.js'

export function effectDigest(effect: Pick<Effect, 'target' | 'action' | 'args' | 'premises'>): string {
  return sha256Hex(canonicalJson({ args: effect.args, premises: effect.premises, target: effect.target, action: effect.action }))
}
