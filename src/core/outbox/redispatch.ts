/**
 * Sending an AMBIGUOUS effect again, after an operator's signed resolution
 * moved it to DISPATCHED (resolve.ts). It is sent by this process, at once,
 * as a first dispatch: if this process dies meanwhile, recovery finds it
 * DISPATCHED and, for tier 3, marks it AMBIGUOUS again, never resending on
 * its own.
 *
 * What it journals after DISPATCHED (COMMITTED, FAILED, AMBIGUOUS...) is
 * written by the operator's process, not a relay: given the operator's key,
 * it signs those records as the operator (crypto/record-signature.ts), and
 * `outbox verify` checks them against [[operators]].
 */
import type { KeyPair } from '../crypto/keys.js'
import { sealer } from '../crypto/seal.js'
import { dispatch } from '../dispatch.js'
import type { EffectSnapshot } from '../effect.js'
import { DEFAULT_RETRY } from '../gate.js'
import type { GateContext, RetryOptions } from '../gate-context.js'
import type { SubmitOutcome } from '../outcome.js'
import { allowAll } from '../policy.js'
import { JournalSecrets } from '../secrets/journal-secrets.js'
import { redactingStore } from '../secrets/redacting-store.js'
import { sealingStore } from '../stores/sealing-store.js'
import type { Store } from '../stores/store.js'
import type { EffectTarget } from '../targets/target.js'

export function redispatch(
  store: Store,
  targets: Map<string, EffectTarget>,
  snap: EffectSnapshot,
  retry: Partial<RetryOptions> = {},
  operatorKey?: KeyPair,
): Promise<SubmitOutcome> {
  const ctx: GateContext = {
    // The outcome it records keeps no secret of its targets, whoever passed the store (secrets/journal-secrets.ts);
    // then, given the operator's key, its commits are sealed as they are journaled.
    store: redactingStore(operatorKey ? sealingStore(store, sealer({ key: operatorKey, role: 'operator' })) : store, JournalSecrets.of(targets.values())),
    targets,
    // Already authorized by the operator's resolution: policy was asked before the first dispatch.
    policy: allowAll,
    retry: { ...DEFAULT_RETRY, ...retry },
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  }
  return dispatch(ctx, snap, { recovering: false })
}
