/**
 * `interlockRun(ctx, interlock, effect)`: an effect from inside a Restate handler,
 * in place of a bare `ctx.run(() => sendIt())`.
 *
 * Restate journals a `ctx.run` step's result once the step returns; a crash
 * between the side effect and that record runs the step again ("there is a
 * small window where an action may be re-run", the SDK's `ctx.run` docs,
 * https://docs.restate.dev/develop/ts/durable-steps). Here the step's body is
 * Interlock: the effect is journaled before it is sent, under an
 * id made from the invocation, so the re-run finds it and carries it on by
 * its tier instead of sending it again (durable/carry.ts).
 *
 * - thread `restate:<invocation id>`: constant across retries and suspensions
 *   of one invocation, unique across invocations (`ctx.request().id`); with an
 *   idempotency key, a client's resubmission is the same invocation;
 * - key `<name>#<n>`: the n-th call with that step name in this invocation,
 *   counted outside `ctx.run` (the context may not be used inside it); a
 *   handler is deterministic, so call n is the same effect on every attempt.
 *
 * What each outcome becomes (docs/engines.md, "Restate"):
 * - COMMITTED: returned, journaled by Restate as the step's result;
 * - AMBIGUOUS, REJECTED, FAILED, or an effect refused for what it is: a
 *   TerminalError naming the effect and the command that resolves it (Restate
 *   does not retry it; the handler may catch it);
 * - HELD, or in flight (a service asked to wait; tries ran out): journaled as
 *   the step's result, then a durable `ctx.sleep` (the invocation suspends,
 *   no retry is spent) and another look, until it settles. After an
 *   operator's release the next look dispatches it.
 * - any other error (the store unreachable): thrown inside `ctx.run`, which
 *   Restate retries.
 */
import { TerminalError, type Context } from '@restatedev/restate-sdk'
import type { EffectInput } from '../../core/effect.js'
import type { Interlock } from '../../core/interlock.js'
import type { SubmitOutcome } from '../../core/outcome.js'
import { isRefusal, keyName, look, outcomeText, operatorCommand, Ordinals, refusalText, threadName, type Committed, type RunMode, type StepEffect } from '../durable/index.js'

export interface InterlockRunOptions {
  /** The step's name, in Restate's journal and in the effect's key (default `<target>.<action>`). */
  name?: string
  /** Durable waits between looks at a HELD or in-flight effect: the first, doubled up to the longest (default 1 s, 60 s). */
  poll?: { firstMs?: number; maxMs?: number }
  /** 'inline' (default): this process journals and sends (`interlock.gate`). 'outbox': it proposes and a relay sends (`interlock.outbox`). */
  mode?: RunMode
  /** Outbox mode: the longest one look waits for a relay inside `ctx.run` (default 10 s). */
  waitMs?: number
}

/** Metadata on the TerminalError (Restate 1.6+ records it with the failure). */
export const METADATA_EFFECT_ID = 'interlock.effect_id'
export const METADATA_STATUS = 'interlock.status'

/** HTTP-style codes of the TerminalError, passed on to an ingress caller. */
export const ERROR_CODES = { ambiguous: 409, rejected: 412, failed: 422, refused: 400 } as const

const ordinals = new Ordinals<Context>()

/** What a step journals: an outcome that is final, or one to look at again after `waitMs`. */
type Look = Committed | (Exclude<SubmitOutcome, Committed> & { waitMs: number })

export async function interlockRun(ctx: Context, interlock: Interlock, effect: StepEffect, options: InterlockRunOptions = {}): Promise<Committed> {
  const name = options.name ?? `${effect.target}.${effect.action}`
  // Both from the context, before ctx.run: the same on every attempt of this invocation.
  const input: EffectInput = { ...effect, thread: threadName('restate', ':', ctx.request().id), key: keyName(`${name}#${ordinals.next(ctx, name)}`) }
  const firstMs = options.poll?.firstMs ?? 1_000
  const maxMs = options.poll?.maxMs ?? 60_000
  for (let n = 0; ; n++) {
    const pollMs = Math.min(firstMs * 2 ** Math.min(n, 30), maxMs)
    const step = await ctx.run<Look>(n === 0 ? `interlock ${name}` : `interlock ${name} (look ${n + 1})`, async () => {
      let outcome: SubmitOutcome
      try {
        outcome = await look(interlock, input, { mode: options.mode, waitMs: options.waitMs })
      } catch (e) {
        if (isRefusal(e)) throw new TerminalError(refusalText(e), { errorCode: ERROR_CODES.refused })
        throw e
      }
      return settle(outcome, input, pollMs)
    })
    if (step.status === 'committed') return step
    await ctx.sleep(step.waitMs, `interlock ${name}: ${step.status}`)
  }
}

/** Inside ctx.run: the outcome to journal, or the TerminalError to journal instead. */
function settle(outcome: SubmitOutcome, input: EffectInput, pollMs: number): Look {
  switch (outcome.status) {
    case 'committed':
      return outcome
    case 'held':
      return { ...outcome, waitMs: pollMs }
    case 'in_flight':
      // Measured here, inside the step, so the wait is journaled with it and a replay sleeps the same.
      return { ...outcome, waitMs: outcome.notBefore ? Math.max(0, Date.parse(outcome.notBefore) - Date.now()) : pollMs }
    default: {
      const metadata: Record<string, string> = { [METADATA_EFFECT_ID]: outcome.effectId, [METADATA_STATUS]: outcome.status }
      const command = operatorCommand(outcome)
      if (command) metadata['interlock.command'] = command
      throw new TerminalError(outcomeText(outcome, input), { errorCode: ERROR_CODES[outcome.status], metadata })
    }
  }
}
