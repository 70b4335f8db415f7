/**
 * The library's front door: everything interlock.toml describes, built in
 * one place, so that neither a library user nor a command can drop a part of
 * it (README "As a library"; docs/library.md):
 *
 * - the store, with the secrets guard in front of every append
 *   (secrets/redacting-store.ts);
 * - the targets, made with the config's `${VAR}` values as their secrets;
 * - the policy of [[policy.rules]], the [[operators]], the retry settings;
 * - an inline Gate and an Outbox built from those, on first use; the gate
 *   signs what it journals with the `[relay] key` when the config has one
 *   (crypto/record-signature.ts);
 * - close(), which closes what it opened.
 *
 * The commands build their store, targets and policy here too (cli/
 * base-command.ts), so none can run without the config's secrets or policy.
 */
import type { OperatorConfig } from './config/types.js'
import { loadConfig, type LoadConfigOptions } from './config/load.js'
import type { InterlockConfig } from './config/types.js'
import type { KeyPair } from './crypto/keys.js'
import { loadRelayKey } from './crypto/relay-key.js'
import { ConfigError } from './errors.js'
import { DEFAULT_RETRY, Gate, type GateOptions } from './gate.js'
import type { RetryOptions } from './gate-context.js'
import { Outbox, type OutboxOptions } from './outbox/outbox.js'
import { RulesPolicy } from './policy/rules.js'
import { JournalSecrets } from './secrets/journal-secrets.js'
import { redactingStore } from './secrets/redacting-store.js'
import { openStore, type OpenStoreOptions } from './stores/open.js'
import type { Store } from './stores/store.js'
import { createTargets, type TargetOptions } from './targets/registry.js'
import type { EffectTarget } from './targets/target.js'

export interface OpenInterlockOptions {
  /** Config file (relative to `cwd`). Default: $INTERLOCK_CONFIG, else ./interlock.toml. */
  configPath?: string
  /** Folder to look in and resolve `configPath` against. Default: process.cwd(). */
  cwd?: string
  /** Where `${VAR}` and INTERLOCK_CONFIG are looked up. Default: process.env. */
  env?: Record<string, string | undefined>
  /** With no file asked for and none in `cwd`, use the embedded default (SQLite, no targets). */
  allowMissing?: boolean
  /** A config already loaded (the commands pass theirs); then no file is read. */
  config?: InterlockConfig
  /** How the store is opened (schema install, clock, group commit...). */
  store?: OpenStoreOptions
  /** How targets are made (an HTTP dispatcher of your own...); their secrets always come from the config. */
  targets?: Omit<TargetOptions, 'secrets'>
  /** The inline gate's sleep between retries (tests pass a fast one). */
  sleep?: GateOptions['sleep']
  /** The key the gate signs with, instead of reading the `[relay] key` file (e.g. one unlocked with a passphrase). */
  relayKey?: KeyPair
}

export async function openInterlock(options: OpenInterlockOptions = {}): Promise<Interlock> {
  const config = options.config ?? loadConfig(loadOptions(options))
  const store = await openStore(config.store, options.store)
  return new Interlock(config, store, options)
}

export class Interlock {
  /** The store, every append scrubbed of the config's secrets. */
  readonly store: Store
  /** [[policy.rules]]: what waits for operators. */
  readonly policy: RulesPolicy
  /** [[operators]]: whose signatures release, deny and resolve. */
  readonly operators: readonly OperatorConfig[]
  /** [gate]: max_attempts, backoff_ms, max_wait_ms. */
  readonly retry: RetryOptions
  private readonly journalSecrets: JournalSecrets
  private made?: Map<string, EffectTarget>
  private inlineGate?: Gate
  private agentOutbox?: Outbox
  private signingKey?: KeyPair | null
  private closed?: Promise<void>

  /** Use openInterlock(). */
  constructor(
    readonly config: InterlockConfig,
    private readonly rawStore: Store,
    private readonly options: Pick<OpenInterlockOptions, 'targets' | 'sleep' | 'relayKey'> = {},
  ) {
    this.journalSecrets = new JournalSecrets(config.secrets)
    this.store = redactingStore(rawStore, this.journalSecrets)
    this.policy = new RulesPolicy(config.policy.rules)
    this.operators = config.operators
    this.retry = { ...DEFAULT_RETRY, ...config.gate }
  }

  /** The `${VAR}` values of the config: never journaled, never printed. */
  get secrets(): readonly string[] {
    return this.config.secrets
  }

  /**
   * A value with every secret replaced by `***`, as the journal would keep it:
   * for text that is signed before it is journaled (an operator's reason).
   */
  scrub<T>(value: T): T {
    return this.journalSecrets.scrub(value)
  }

  /** Every [targets.<name>], made on first use with the config's secrets. */
  get targets(): ReadonlyMap<string, EffectTarget> {
    this.made ??= createTargets(this.config.targets, { ...this.options.targets, ...this.targetOptions() })
    return this.made
  }

  /** What every target made from this config needs: its secrets, and for a notarized one the agent's key. */
  targetOptions(): TargetOptions {
    const notarized = Object.values(this.config.targets).some((t) => t.type === 'http' && t.notary)
    return {
      secrets: this.config.secrets,
      ...(notarized ? { notary: { key: this.signing?.key, services: this.config.notary?.services } } : {}),
    }
  }

  /**
   * What a gate built here signs with: the `[relay] key` (or the one given),
   * trusted by `outbox verify` under `[relay] id`; undefined without one.
   */
  get signing(): { key: KeyPair; id?: string } | undefined {
    if (this.signingKey === undefined) {
      const file = this.config.relay?.key
      const key = this.options.relayKey ?? (file ? loadRelayKey(file) : null)
      if (key && key.kind !== 'relay') throw new ConfigError(`openInterlock({ relayKey }) holds an ${key.kind} key, not a relay key`, [], { hint: 'Make a relay key with `interlock relay keygen`.' })
      this.signingKey = key
    }
    return this.signingKey ? { key: this.signingKey, id: this.config.relay?.id } : undefined
  }

  /** The inline gate: submit journals and dispatches in this process, under the config's policy. */
  get gate(): Gate {
    this.inlineGate ??= new Gate({
      store: this.store,
      targets: this.targets.values(),
      policy: this.policy,
      retry: this.retry,
      sleep: this.options.sleep,
      secrets: this.config.secrets,
      signing: this.signing,
    })
    return this.inlineGate
  }

  /** The agent's side of a shared store: submit journals, `interlock relay` dispatches. */
  get outbox(): Outbox {
    this.agentOutbox ??= new Outbox(this.outboxOptions())
    return this.agentOutbox
  }

  /** Waits for the gate's submits in flight, then closes the targets and the store. Idempotent. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      try {
        await this.agentOutbox?.close()
        // The gate closes the targets it was given; without one they are closed here.
        if (this.inlineGate) await this.inlineGate.close()
        else if (this.made) await Promise.allSettled([...this.made.values()].map((t) => t.close?.()))
      } finally {
        await this.rawStore.close()
      }
    })()
    return this.closed
  }

  private outboxOptions(): OutboxOptions {
    // No policy: the agent only proposes; the relay applies the operators' policy (docs/design.md, "The trust boundary").
    return { store: this.store, targets: this.targets.values() }
  }
}

function loadOptions(o: OpenInterlockOptions): LoadConfigOptions {
  return { path: o.configPath, cwd: o.cwd, env: o.env, allowMissing: o.allowMissing }
}
