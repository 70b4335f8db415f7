import { Flags } from '@oclif/core'
import { BaseCommand } from '../cli/base-command.js'
import { keyFlags, operatorKey } from '../cli/operator-key.js'
import { systemClock } from '../core/clock.js'
import { isInterlockError } from '../core/errors.js'
import { assertTrusted } from '../core/outbox/operator-context.js'
import { trustedRelayKeys, type RelayKey } from '../core/outbox/relay-keys.js'
import { startConsole } from '../console/server.js'

export default class Console extends BaseCommand<typeof Console> {
  // A server prints one line (the link) and logs: there is no result for --json to carry.
  static override enableJsonFlag = false
  static override allowDefaultConfig = true
  // Looking needs no target's credentials; only a redispatch makes the targets (and needs them).
  static override needsAllTargets = false
  static override summary = 'Serve the outbox in a browser on this machine: status, effects, journals, and with --key releases, denials and resolutions.'
  static override description = `Prints one line on stdout, "Console: http://127.0.0.1:PORT/?token=…", and serves until SIGTERM or SIGINT; logs go to stderr. Open the link in a browser on this machine.

Pages: the status (counts per state, the oldest effect in flight, what waits for an operator, relays and their heartbeats: \`outbox status\`); effects filtered by state, target, thread, principal and time, a page at a time (\`outbox list\`); one effect: what it is, its args and premises (secrets scrubbed, as the CLI prints them), the rule that holds it and why, releases so far and how many the rule needs, what each resolution of an AMBIGUOUS effect does, and its journal as a timeline, each record with its state, time, signers, and whether its signatures (\`outbox verify\`'s checks) and its chain link verify. Pages update by themselves while open (server-sent events, from PostgreSQL's notifications, polling otherwise).

With --key, the buttons release, deny and resolve, signed with your operator key: the same signed statements and checks as \`outbox release\` and \`outbox resolve\` (a key interlock.toml does not trust refuses to start; an effects row that disagrees with its journal is refused), and each shows the command that does the same. Without --key the console is read-only and says so.

Security: it listens on 127.0.0.1 only. The link's token works once: the first browser to open it gets a session cookie (HttpOnly, SameSite=Strict) and the link is spent. Every request must name the console in Host (127.0.0.1:PORT or localhost:PORT) and carry no Origin but the console's own, or it is refused 403; actions also need the session's CSRF token. Your private key stays in this process: no page carries it.

Exit codes: 0 stopped by a signal; 2 bad usage, or --port in use; 3 config invalid, key file refused, or the key is not trusted in interlock.toml; 4 store unreachable.`
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --key ~/.interlock/alice.operator.key',
    '<%= config.bin %> <%= command.id %> --port 7420 --key alice.operator.key --passphrase-env ALICE_KEY_PASSPHRASE',
  ]
  static override flags = {
    port: Flags.integer({ min: 0, max: 65_535, default: 0, description: 'Port of 127.0.0.1 to listen on (0: any free port).' }),
    ...keyFlags,
  }

  async run(): Promise<void> {
    // The key first: a wrong passphrase or an untrusted key stops here, before anything listens.
    const key = this.flags.key ? operatorKey(this.flags, process.env) : undefined
    const interlock = await this.openInterlock()
    try {
      if (key) assertTrusted({ operators: interlock.operators, key })
      const relay = relayKeys(interlock.config.relay, (line) => this.logToStderr(line))
      const served = await startConsole(
        {
          interlock,
          key,
          relayKeys: relay.keys,
          relayKeysNote: relay.note,
          cli: { key: this.flags.key, passphraseEnv: this.flags['passphrase-env'], config: this.flags.config },
          clock: systemClock,
        },
        { port: this.flags.port, log: (line) => this.logToStderr(`console: ${line}`) },
      )
      this.log(`Console: ${served.url}`)
      this.logToStderr(`console: serving ${served.origin} (127.0.0.1 only); ${key ? `signing as operator ${key.name}` : 'read-only: started without --key'}. Stop it with Ctrl-C.`)
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve)
        process.once('SIGINT', resolve)
      })
      this.logToStderr('console: stopping')
      await served.close()
    } finally {
      await interlock.close()
    }
  }
}

/** The [relay] key's public half, as `outbox verify` trusts it; one that cannot be read leaves relay signatures unchecked, said so. */
function relayKeys(relay: Parameters<typeof trustedRelayKeys>[0], log: (line: string) => void): { keys: RelayKey[]; note: string } {
  try {
    const keys = trustedRelayKeys(relay, [])
    return keys.length === 0
      ? { keys, note: 'Relay signatures are not checked: interlock.toml names no [relay] key (as `outbox verify` without --relay-key).' }
      : { keys, note: `Relay signatures are checked against ${keys.map((k) => `${k.name} ([relay] key ${k.from})`).join(', ')}.` }
  } catch (e) {
    if (!isInterlockError(e)) throw e
    log(`console: ${e.message}; relay signatures are shown unchecked`)
    return { keys: [], note: `Relay signatures are not checked: ${e.message}.` }
  }
}
