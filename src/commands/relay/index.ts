import { requireSafeReplication } from '../../core/stores/postgres/replication.js'
import { hostname } from 'node:os'
import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { DEFAULTS } from '../../core/config/defaults.js'
import { loadRelayKey } from '../../core/crypto/relay-key.js'
import { ConfigError } from '../../core/errors.js'
import { requireFullAccess } from '../../core/stores/full-access.js'
import { Relay, type RelayStats } from '../../core/relay/relay.js'

export default class RelayRun extends BaseCommand<typeof RelayRun> {
  static override whyConfigNeeded = 'the relay needs one, for the targets it sends effects to (the embedded default has none)'
  static override summary = 'Drain the outbox: claim ready effects, re-check premises, dispatch, commit, sign receipts.'
  static override description = `Runs until SIGTERM or SIGINT, then drains: claims nothing more, finishes the effects it started, gives back the ones it had not started, and exits 0.

Several relays may drain one store. Each claims effects with a lease (PostgreSQL: FOR UPDATE SKIP LOCKED, woken by LISTEN/NOTIFY, polling as a fallback) and renews it while it works; every journal write it makes carries the lease's fencing token, so a relay that was stopped past its lease and resumes can no longer dispatch or commit an effect another relay took over. When the store goes away (a PostgreSQL restart) the relay dispatches nothing it could not journal, retries with back-off, and resumes.

It logs to stderr one line per effect it finishes (its outcome), per failed try it will retry, per lease it lost, per request a target's fence stopped, per effect it refused or returned to wait. A store operation that fails is logged once, reminded at most every minute while it lasts, and logged again when it recovers ("claiming effects recovered after 42 s, 17 failed attempts"). --log-format json writes each as one JSON object per line (time, level, event, relay, effectId, target, state, outcome, reason, msg) for journald and log shippers.

With --health-port, /healthz answers 200 while the relay makes progress, and 503 when it drains, when a store call has been pending for [relay] stall_ms (default 20 s), when a store operation its work needs has been failing that long, or when it has had work and has neither claimed, finished nor tried anything for that long; an idle relay is healthy. The store's PostgreSQL connections carry [store] statement_timeout_ms, lock_timeout_ms and idle_in_transaction_timeout_ms, so a lock held by an upgrade or a forgotten transaction makes a claim fail and be retried (and logged) instead of blocking the relay without end.

Its heartbeat row is what \`outbox status\` shows (one row per relay id, so one per start with the default id); the heartbeat also deletes the rows of relays not seen for [relay] heartbeat_retention (default 7 days).

A service that asks for a longer wait than [gate] max_wait_ms (a Retry-After, a rate-limit reset) does not hold a concurrency slot: the effect returns to AUTHORIZED, the slot goes to the next effect at once, and the effect's lease is parked until that time (renewed once to run out then, and no longer renewed), so no relay claims it before; if this relay dies, the lease still runs out then.

Agents only propose: the relay applies [[policy.rules]] of this interlock.toml to each PROPOSED effect (HELD for operators, else AUTHORIZED). Before it sends anything it reads the effect's journal (hash chain verified) and sends the args and premises of the PROPOSED record, the ones operators' releases sign; a held effect goes only with a quorum of valid releases by the [[operators]] of this file, checked by the relay itself. An effect whose effects row disagrees with its journal, or whose authorization does not stand, is refused: nothing sent, nothing written, a log line naming it, a metric, a line in \`outbox status\`; it is left alone for 10 minutes, then checked again.

Every journal record the relay writes is signed with the relay's key (\`interlock relay keygen\`), and so is the receipt of every COMMITTED effect; \`interlock outbox verify\` checks them against the relay's public key.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --key relay.key',
    '<%= config.bin %> <%= command.id %> --concurrency 64 --health-port 9464',
  ]

  static override flags = {
    key: Flags.string({ env: 'INTERLOCK_RELAY_KEY', helpValue: '<file>', description: 'Relay private key file (mode 0600). Default: [relay] key.' }),
    'relay-id': Flags.string({ description: 'Names this relay in leases, heartbeats and receipts. Default: [relay] id, else <host>-<pid>.' }),
    concurrency: Flags.integer({ min: 1, max: 10_000, description: `Most effects in flight per target. Default: [relay] concurrency, else ${DEFAULTS.relayConcurrency}.` }),
    'lease-ms': Flags.integer({ min: 100, description: `Lease length in milliseconds. Default: [relay] lease_ms, else ${DEFAULTS.relayLeaseMs}.` }),
    'poll-ms': Flags.integer({ min: 1, description: `Longest wait between claims in milliseconds. Default: [relay] poll_ms, else ${DEFAULTS.relayPollMs}.` }),
    'health-port': Flags.integer({ min: 0, max: 65_535, description: 'Serve /healthz and /metrics on this port of 127.0.0.1 (0: any free port). Default: [relay] health_port.' }),
    'log-format': Flags.string({
      options: ['text', 'json'],
      env: 'INTERLOCK_LOG_FORMAT',
      description: `How to log to stderr: text, or json (one JSON object per line, for journald and log shippers). Default: [relay] log_format, else ${DEFAULTS.relayLogFormat}.`,
    }),
  }

  async run(): Promise<RelayStats> {
    const config = await this.interlockConfig()
    requireFullAccess(config.store, 'the relay')
    const settings = config.relay
    const keyFile = this.flags.key ?? settings?.key
    if (!keyFile) {
      throw new ConfigError('the relay has no key to sign receipts with', [], {
        hint: 'Make one with `interlock relay keygen`, then pass --key <file> or set [relay] key in interlock.toml.',
      })
    }
    const key = loadRelayKey(keyFile, this.flags.key ? '--key or INTERLOCK_RELAY_KEY' : '[relay] key')
    // A failover must lose nothing it journals: an asynchronously replicated primary is refused unless accepted.
    if (config.store.kind === 'postgres') {
      const verdict = await requireSafeReplication(config.store)
      if (verdict.accepted) this.logToStderr('%s', `relay: warning: ${verdict.detail}`)
    }
    // Store, targets (with the config's secrets) and policy from the front door, as every command.
    const interlock = await this.openInterlock()
    const relay = new Relay({
      store: interlock.store,
      targets: interlock.targets.values(),
      relayId: this.flags['relay-id'] ?? settings?.id ?? `${hostname()}-${process.pid}`,
      key,
      // The config's own rules and operators: the relay decides what is held and checks releases itself.
      policy: interlock.policy,
      operators: interlock.operators,
      retry: interlock.retry,
      secrets: interlock.secrets,
      notify: interlock.config,
      concurrency: this.flags.concurrency ?? settings?.concurrency,
      leaseMs: this.flags['lease-ms'] ?? settings?.leaseMs,
      pollMs: this.flags['poll-ms'] ?? settings?.pollMs,
      healthPort: this.flags['health-port'] ?? settings?.healthPort,
      stallMs: settings?.stallMs,
      heartbeatRetentionMs: settings?.heartbeatRetentionMs,
      logFormat: (this.flags['log-format'] as 'text' | 'json' | undefined) ?? settings?.logFormat,
      // '%s': a line is written as is, never read as a format string (a JSON line may hold '%%').
      log: (line) => this.logToStderr('%s', line),
    })
    const stopped = new Promise<void>((resolve) => {
      process.once('SIGTERM', () => resolve())
      process.once('SIGINT', () => resolve())
    })
    try {
      await relay.start()
      await stopped
      const stats = await relay.stop()
      if (!this.jsonEnabled()) {
        this.log(`relay ${stats.relay}: ${stats.finished} effects finished (${Object.entries(stats.byStatus).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'})`)
      }
      return stats
    } finally {
      await interlock.close()
    }
  }
}
