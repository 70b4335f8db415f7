import { BaseCommand } from '../../cli/base-command.js'
import { systemClock } from '../../core/clock.js'
import { STATES } from '../../core/lifecycle.js'
import { outboxStatus, type OutboxStatus } from '../../core/outbox/status.js'

export default class OutboxStatusCommand extends BaseCommand<typeof OutboxStatusCommand> {
  static override summary = 'Counts per state, the oldest effect in flight, what waits for an operator, relay heartbeats.'
  static override description = `A summary of the outbox for an operator on call: how many effects are in each state, the oldest one still in flight (PROPOSED, AUTHORIZED, DISPATCHED) and its age, every HELD effect (with the rule that holds it) and every AMBIGUOUS one (with why), when each relay last sent a heartbeat, and the effects a relay refused to send because their effects row disagreed with their journal or their authorization did not stand.

Exit codes: 0 shown (whatever the counts); 3 config invalid; 4 store unreachable.`
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json']

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
      this.table(['effect', 'target', 'action', 'thread', 'since', 'why'], list.map((w) => [w.effectId, w.target, w.action, w.thread, w.since, w.why]))
    }
    if (status.refused.length > 0) {
      this.log('\nRefused by a relay before sending (nothing sent; see the relay log):')
      this.table(['effect', 'relay', 'target', 'at', 'why'], status.refused.map((r) => [r.effectId, r.relay, r.target, r.at, r.why]))
    }
    if (status.relays.length === 0) this.log('\nNo relay heartbeats recorded.')
    else {
      this.log('\nRelays:')
      this.table(['relay', 'last heartbeat', 'started'], status.relays.map((r) => [r.relay, r.lastSeen, r.startedAt]))
    }
    return status
  }
}
