/** What an operator's act needs: the store, who is trusted, the rules, the operator's key, a clock. */
import type { Clock } from '../clock.js'
import type { OperatorConfig } from '../config/types.js'
import type { KeyPair } from '../crypto/keys.js'
import type { EffectSnapshot } from '../effect.js'
import { ConflictError, ExitCode, InterlockError, NotFoundError } from '../errors.js'
import type { State } from '../lifecycle.js'
import type { RulesPolicy } from '../policy/rules.js'
import type { Store } from '../stores/store.js'

export interface OperatorContext {
  store: Store
  operators: readonly OperatorConfig[]
  policy: RulesPolicy
  key: KeyPair
  clock: Clock
}

/** Refuses a key interlock.toml does not trust under its name: its signatures would never count. */
export function assertTrusted(ctx: Pick<OperatorContext, 'operators' | 'key'>): void {
  const { key } = ctx
  if (key.kind !== 'operator') {
    throw new InterlockError('E_UNTRUSTED_KEY', ExitCode.CONFIG, `the key of ${key.kind} "${key.name}" is not an operator key`, {
      hint: 'Use a key made with `interlock operator keygen`.',
    })
  }
  const op = ctx.operators.find((o) => o.name === key.name)
  if (!op || op.publicKey !== key.publicKey) {
    throw new InterlockError(
      'E_UNTRUSTED_KEY',
      ExitCode.CONFIG,
      op ? `operator "${key.name}" is declared in interlock.toml with another public key than this key file's` : `operator "${key.name}" is not declared in interlock.toml`,
      {
        hint: `Add (or correct) this under [[operators]]:\n[[operators]]\nname = "${key.name}"\npublic_key = "${key.publicKey}"`,
        context: { operator: key.name, publicKey: key.publicKey },
      },
    )
  }
}

/** The effect, which must be in one of `states`. */
export async function effectIn(store: Store, effectId: string, states: readonly State[], act: string): Promise<EffectSnapshot> {
  const snap = await store.get(effectId)
  if (!snap) {
    throw new NotFoundError(`no effect ${effectId} in the journal`, {
      hint: 'List effects with `interlock outbox list`; ids are 64 hex characters.',
      context: { effectId },
    })
  }
  if (!states.includes(snap.state)) {
    throw new ConflictError(`effect ${effectId} is ${snap.state}; only a ${states.join(' or ')} effect can be ${act}`, {
      hint: `See its history with \`interlock outbox show ${effectId}\`.`,
      context: { effectId, state: snap.state },
    })
  }
  return snap
}
