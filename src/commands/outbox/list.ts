import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { wideFlag } from '../../cli/wide-flag.js'
import { STATES } from '../../core/lifecycle.js'
import { listEffects, parseStates, parseTime, type ListPage } from '../../core/outbox/list.js'

export default class OutboxList extends BaseCommand<typeof OutboxList> {
  static override needsAllTargets = false
  static override allowDefaultConfig = true
  static override summary = 'List effects, filtered by state, target, thread, principal and time, newest first.'
  static override description = `One row per effect: id, state, target, action, thread, created, and the principal that asked when any effect listed has one (the callers of \`interlock mcp-proxy\`). Filters combine; --state may be repeated. Pages of --limit effects; --page picks one (the footer says whether another follows). With no config file, it reads the embedded default (the SQLite journal ./interlock.db).

Exit codes: 0 listed (even when nothing matched); 2 bad filter; 3 config invalid; 4 store unreachable.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --state HELD --state AMBIGUOUS',
    '<%= config.bin %> <%= command.id %> --target refunds --since 2026-01-31T00:00:00Z --limit 20 --page 2',
    '<%= config.bin %> <%= command.id %> --thread agent-7 --json',
  ]
  static override flags = {
    state: Flags.string({ multiple: true, helpValue: '<state>', description: `Only effects in this state, in any case (repeatable): ${STATES.join(', ')}.` }),
    target: Flags.string({ description: 'Only effects on this target.' }),
    thread: Flags.string({ description: 'Only effects of this thread (agent run).' }),
    principal: Flags.string({ helpValue: '<principal>', description: 'Only effects asked for by this principal, e.g. token:ci-bot (the callers of `interlock mcp-proxy`).' }),
    since: Flags.string({ helpValue: '<time>', description: 'Only effects created at or after this ISO-8601 time.' }),
    until: Flags.string({ helpValue: '<time>', description: 'Only effects created before this ISO-8601 time.' }),
    limit: Flags.integer({ min: 1, max: 10_000, default: 50, description: 'Effects per page.' }),
    page: Flags.integer({ min: 1, default: 1, description: 'Which page (1 is the newest).' }),
    ...wideFlag,
  }

  async run(): Promise<ListPage> {
    const f = this.flags
    const states = f.state === undefined ? undefined : parseStates(f.state)
    const since = f.since === undefined ? undefined : parseTime(f.since, '--since')
    const until = f.until === undefined ? undefined : parseTime(f.until, '--until')
    const interlock = await this.openInterlock()
    const store = interlock.store
    let page: ListPage
    try {
      page = await listEffects(store, { states, target: f.target, thread: f.thread, principal: f.principal, since, until, limit: f.limit, page: f.page })
    } finally {
      await interlock.close()
    }
    if (page.effects.length === 0) this.log(page.page === 1 ? 'No effects match.' : `No effects on page ${page.page}.`)
    else if (page.effects.some((e) => e.principal !== undefined)) {
      this.table(
        [{ title: 'effect', fit: 'cut' }, 'state', 'target', 'action', 'thread', 'principal', 'created'],
        page.effects.map((e) => [e.effectId, e.state, e.target, e.action, e.thread, e.principal ?? '-', e.createdAt]),
      )
    } else this.table([{ title: 'effect', fit: 'cut' }, 'state', 'target', 'action', 'thread', 'created'], page.effects.map((e) => [e.effectId, e.state, e.target, e.action, e.thread, e.createdAt]))
    this.log(`Page ${page.page}${page.more ? `; more with --page ${page.page + 1}` : ', the last'}.`)
    return page
  }
}
