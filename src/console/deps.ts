/** What the console works with: the outbox as interlock.toml opens it, the operator's key (or none), and how to check relay signatures. */
import type { Clock } from '../core/clock.js'
import type { KeyPair } from '../core/crypto/keys.js'
import type { Interlock } from '../core/interlock.js'
import type { TrustedKey } from '../core/outbox/verify.js'
import type { CliFlags } from './views/format.js'

export interface ConsoleDeps {
  interlock: Pick<Interlock, 'store' | 'operators' | 'policy' | 'retry' | 'secrets' | 'scrub' | 'targets'>
  /** The operator key releases, denials and resolutions are signed with; undefined: read-only. It never leaves this process. */
  key?: KeyPair
  /** Relay public keys the timeline checks relay signatures with (`outbox verify`'s, from [relay] key). */
  relayKeys: readonly TrustedKey[]
  /** How relay signatures are checked, in words, for the effect page. */
  relayKeysNote: string
  /** What an equivalent CLI command needs of the console's own flags. */
  cli: CliFlags
  clock: Clock
}
