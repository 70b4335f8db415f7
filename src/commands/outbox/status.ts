import { BaseCommand } from '../../cli/base-command.js'
import { wideFlag } from '../../cli/wide-flag.js'
import { systemClock } from '../../core/clock.js'
import { STATES } from '../../core/lifecycle.js'
import { GONE_AFTER_LEASES, outboxStatus, type OutboxStatus } from '../../core/outbox/status.js'

/** Stopped or gone relays listed by name in the human output; --json has them all. */
const ENDED_SHOWN = 10

function ago(ms: number): string {
  const s = Math.round(ms / 1000)
  if (s < 120) return `${s} s ago`
  if (s < 7200) return `${Math.round(s / 60)} min ago`
  if (s < 172_800) return `${Math.round(s / 3600)} h ago`
  return `${Math.round(s / 86_400)} d ago`
}

export default class OutboxStatusCommand extends BaseCommand<typeof OutboxStatusCommand> {
  static override needsAllTargets = false
  static override allowDefaultConfig = true
  static override summary = 'Counts per state, the oldest effect in flight, what waits for an operator, relay heartbeats.'
  static override description = `A summary of the outbox for an operator on call: how many effects are in each state, the oldest one still in flight (PROPOSED, AUTHORIZED, DISPATCHED) and its age, every HELD effect (with the rule that holds it and why) and every AMBIGUOUS one (with why), each relay's state (running, draining, stopped; gone when it sent no heartbeat for ${GONE_AFTER_LEASES} lease lengths without saying it stopped) and when it last sent a heartbeat, and the effects a relay refused to send because their effects row disagreed with their journal or their authorization did not stand. With no config file, it reads the embedded default (the SQLite journal ./interlock.db).

Exit codes: 0 shown (whatever the counts); 3 config invalid; 4 store unreachable.`
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json']
  static override flags = { ...wideFlag }

  async run(): Promise<OutboxStatus> {
    const interlock = await this.openInterlock()
    const store = interlock.store
    let status: OutboxStatus
    try {
      status = await outboxStatus(store, systemClock.now())
    } finally {
      await interlock.close()
    }
    this.table(['state', 'effects'], STATES.map((s) => [s, status.counts[s]]))
    const o = status.oldestInFlight
    this.log(o ? `\nOldest in flight: ${o.effectId} (${o.state}) since ${o.since}, ${Math.round(o.ageMs / 1000)} s ago.` : '\nNothing in flight.')
    for (const [title, list] of [['HELD, waiting for a release', status.held], ['AMBIGUOUS, waiting for a resolution', status.ambiguous]] as const) {
      if (list.length === 0) continue
      this.log(`\n${title}:`)
      this.table([{ title: 'effect', fit: 'cut' }, 'target', 'action', 'thread', 'since', 'why'], list.map((w) => [w.effectId, w.target, w.action, w.thread, w.since, w.why]))
    }
    if (status.refused.length > 0) {
      this.log('\nRefused by a relay before sending (nothing sent; see the relay log):')
      this.table([{ title: 'effect', fit: 'cut' }, 'relay', 'target', 'at', 'why'], status.refused.map((r) => [r.effectId, r.relay, r.target, r.at, r.why]))
    }
    if (status.relays.length === 0) this.log('\nNo relay heartbeats recorded.')
    else {
      // Every live relay; of those stopped or gone (one row per start with the default id) the latest few.
      const live = status.relays.filter((r) => r.state === 'running' || r.state === 'draining')
      const ended = status.relays.filter((r) => r.state === 'stopped' || r.state === 'gone')
      const shown = [...live, ...ended.slice(0, ENDED_SHOWN)]
      this.log(`\nRelays (${live.length} running or draining, ${ended.length} stopped or gone):`)
      this.table(['relay', 'state', 'last heartbeat', 'started'], shown.map((r) => [r.relay, r.state, `${r.lastSeen} (${ago(r.lastSeenAgoMs)})`, r.startedAt]))
      if (ended.length > ENDED_SHOWN) this.log(`… and ${ended.length - ENDED_SHOWN} more stopped or gone (--json lists all; rows go after [relay] heartbeat_retention).`)
    }
    return status
  }
}
