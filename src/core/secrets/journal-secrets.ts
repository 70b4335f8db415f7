/**
 * Secrets never reach the journal (docs/design.md, "The trust boundary",
 * rule 5): what a Gate, an Outbox or a Relay holds to keep every value that
 * came from the environment out of what it appends.
 *
 * - An effect's args, key, thread and action are journaled byte for byte and
 *   are what its id is made of: one that holds a secret is refused, never
 *   rewritten (admit).
 * - Premises are scrubbed before anything compares them (admit, and
 *   Gate.capture), so a premise captured again after a crash compares equal
 *   to the stored one; the built-in targets scrub what they read the same
 *   way (http/client.ts), so capture and re-check agree.
 * - Every other record's data (reasons, receipts, violations) is scrubbed as
 *   it is appended (redacting-store.ts).
 *
 * Values shorter than JOURNAL_SECRET_MIN_LENGTH are left alone here (they are
 * still scrubbed from printed output): a port or a short name would match
 * amounts, and hex digests the journal's hash chain depends on.
 */
import type { Effect } from '../effect.js'
import { InputError } from '../errors.js'
import { targetOrigin } from '../targets/origin.js'
import type { EffectTarget } from '../targets/target.js'
import { REDACTED, SecretMatcher } from './matcher.js'

export const JOURNAL_SECRET_MIN_LENGTH = 8

export class JournalSecrets {
  private readonly values = new Set<string>()
  private matcher = new SecretMatcher([])

  constructor(values: Iterable<string> = []) {
    this.add(values)
  }

  /** The secrets of targets made from interlock.toml (targets/origin.ts), and any others given. */
  static of(targets: Iterable<EffectTarget>, extra: Iterable<string> = []): JournalSecrets {
    const s = new JournalSecrets(extra)
    for (const t of targets) s.addTarget(t)
    return s
  }

  addTarget(target: EffectTarget): void {
    this.add(targetOrigin(target)?.secrets ?? [])
  }

  add(values: Iterable<string>): void {
    const before = this.values.size
    for (const v of values) if (typeof v === 'string' && v.length >= JOURNAL_SECRET_MIN_LENGTH) this.values.add(v)
    if (this.values.size !== before) this.matcher = new SecretMatcher(this.values)
  }

  get empty(): boolean {
    return this.matcher.empty
  }

  /**
   * The effect as it may be journaled: refused (InputError) when a field its
   * id is made of holds a secret, in any spelling; its premises scrubbed.
   */
  admit(effect: Effect): Effect {
    if (this.matcher.empty) return effect
    const where = this.matcher.locate({ thread: effect.thread, action: effect.action, args: effect.args, key: effect.key ?? null }, 'effect')
    if (where) {
      throw new InputError(`effect ${effect.id}: ${where} holds a secret (the value of a \${VAR} in interlock.toml); refused, nothing was journaled`, {
        hint: 'Args are journaled byte for byte and kept: pass what the target needs to act (an id, a name), never a credential. Credentials belong in the target\'s settings as ${VAR} references.',
        context: { effectId: effect.id, field: where },
      })
    }
    const premises = this.matcher.redactValue(effect.premises)
    return premises === effect.premises ? effect : { ...effect, premises }
  }

  /** A record's data, or premises, with every secret replaced by `***`. */
  scrub<T>(value: T): T {
    return this.matcher.redactValue(value, REDACTED)
  }

  /** A log line with every secret replaced by `***`. */
  text(line: string): string {
    return this.matcher.redact(line, REDACTED)
  }
}
