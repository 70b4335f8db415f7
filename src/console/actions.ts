/**
 * Release, deny and resolve from the console: the same core functions the
 * CLI commands call (outbox/release.ts, resolve.ts, redispatch.ts), with the
 * operator key the console was started with, so the signed statements and
 * the checks before them (a key interlock.toml does not trust, an effect no
 * longer HELD, an effects row that disagrees with its journal) are the
 * CLI's. Each outcome, done or refused, says the CLI command that does the
 * same.
 */
import { UsageError, isInterlockError } from '../core/errors.js'
import { redispatch } from '../core/outbox/redispatch.js'
import { denyEffect, releaseEffect } from '../core/outbox/release.js'
import { resolveEffect, type Resolution } from '../core/outbox/resolve.js'
import type { ConsoleDeps } from './deps.js'
import type { ActionNote } from './session.js'
import { cliCommand } from './views/format.js'

export type ActionKind = 'release' | 'deny' | 'resolve'

export const ACTIONS: readonly ActionKind[] = ['release', 'deny', 'resolve']

const HOWS: readonly Resolution[] = ['applied', 'not-applied', 'redispatch']

/** Runs one action; an error a user can cause comes back as a refused note (nothing signed), anything else is thrown. */
export async function runAction(deps: ConsoleDeps, effectId: string, kind: ActionKind, form: URLSearchParams): Promise<ActionNote> {
  const at = deps.clock.now().toISOString()
  const act = kind === 'deny' ? 'denial' : kind === 'resolve' ? 'resolution' : 'release'
  let command = cliCommand(['outbox', kind === 'resolve' ? 'resolve' : 'release', effectId], deps.cli)
  try {
    const key = deps.key
    if (!key) throw new UsageError('this console is read-only: it was started without --key', { hint: 'Start it with `interlock console --key <your operator key file>`.' })
    const { store, operators, policy } = deps.interlock
    const ctx = { store, operators, policy, key, clock: deps.clock }
    if (kind === 'release') {
      const r = await releaseEffect(ctx, effectId)
      const text =
        r.state === 'AUTHORIZED'
          ? `Released: quorum met (${r.quorum.signers.join(', ')}); the effect is AUTHORIZED and goes on to dispatch.`
          : `Signed: ${r.quorum.have} of ${r.quorum.need} operators have released it; it stays ${r.state}.${why(r.reasons)}`
      return { act, at, ok: true, text, command }
    }
    if (kind === 'deny') {
      // Scrubbed before it is signed, as the CLI does: the journal keeps no secret, and the signature covers what it keeps.
      const reason = deps.interlock.scrub(form.get('reason')?.trim() || 'denied by an operator')
      command = cliCommand(['outbox', 'release', effectId, '--deny', '--reason', reason], deps.cli)
      const d = await denyEffect(ctx, effectId, reason)
      return { act, at, ok: true, text: `Denied: the effect is REJECTED (signed by ${d.operator}).`, command }
    }
    const how = form.get('how') as Resolution | null
    if (!how || !HOWS.includes(how)) throw new UsageError('say what happened: applied, not-applied or redispatch')
    command = cliCommand(['outbox', 'resolve', effectId, `--${how}`], deps.cli)
    // The targets are made before anything is signed: a target that cannot be made (an unset ${VAR}) refuses the redispatch whole.
    const targets = how === 'redispatch' ? new Map(deps.interlock.targets) : undefined
    const r = await resolveEffect(ctx, effectId, how)
    if (!targets) return { act, at, ok: true, text: `Resolved: the effect is ${r.state} (signed by ${r.operator}).`, command }
    // Sent from this process, as `outbox resolve --redispatch` sends it: what it journals next is signed with the operator's key.
    try {
      const outcome = await redispatch(store, targets, r.snapshot, deps.interlock.retry, key)
      return { act, at, ok: outcome.status === 'committed', text: `Resolved for sending again (signed by ${r.operator}), and sent: ${outcome.status}.`, command }
    } catch (e) {
      if (!isInterlockError(e)) throw e
      return { act, at, ok: false, text: `Resolved for sending again (signed by ${r.operator}), but sending failed: ${e.message}. The effect is DISPATCHED: recovery (a relay, or interlock reconcile-effects) takes it from there.`, command }
    }
  } catch (e) {
    if (!isInterlockError(e)) throw e
    return { act, at, ok: false, text: `${e.message}. Nothing was signed by this action.`, command, ...(e.hint ? { hint: e.hint } : {}) }
  }
}

/** Why earlier releases do not count; the count itself is said already. */
function why(reasons: readonly string[]): string {
  const shown = reasons.filter((r) => !r.startsWith('below quorum'))
  return shown.length > 0 ? ` ${shown.join('; ')}.` : ''
}
