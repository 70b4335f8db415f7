/**
 * What each page reads, through the same core functions as the CLI command
 * it stands for: outboxStatus (`outbox status`), listEffects (`outbox list`),
 * effectDetails (`outbox show`), verify's engine (`outbox verify`) for the
 * timeline, recordedQuorum for releases so far. Every view gets its data
 * scrubbed of the config's secrets first, as the CLI's output is.
 */
import { redactValue } from '../core/config/redact.js'
import { IntegrityError, NotFoundError, UsageError } from '../core/errors.js'
import { resolveEffectId } from '../core/outbox/effect-ref.js'
import { listEffects, parseStates, parseTime } from '../core/outbox/list.js'
import { recordedQuorum } from '../core/outbox/recorded-quorum.js'
import { effectDetails, type EffectDetails } from '../core/outbox/show.js'
import { outboxStatus } from '../core/outbox/status.js'
import { effectTimeline, type TimelineEntry } from '../core/outbox/timeline.js'
import type { ReleaseStatement } from '../core/crypto/statements.js'
import type { ConsoleDeps } from './deps.js'
import type { Session } from './session.js'
import { ambiguousPage } from './views/ambiguous-view.js'
import { effectPage, type EffectView } from './views/effect-view.js'
import type { Html } from './views/html.js'
import type { PageContext } from './views/layout.js'
import { listPage, type ListForm } from './views/list-view.js'
import { statusPage } from './views/status-view.js'

const DEFAULT_LIMIT = 50

export async function statusView(deps: ConsoleDeps, ctx: PageContext): Promise<Html> {
  const status = await outboxStatus(deps.interlock.store, deps.clock.now())
  return statusPage(redactValue(status, deps.interlock.secrets), ctx)
}

export async function listView(deps: ConsoleDeps, query: URLSearchParams, ctx: PageContext): Promise<{ status: number; page: Html }> {
  const form: ListForm = {
    states: query.getAll('state').filter((s) => s !== ''),
    target: query.get('target')?.trim() ?? '',
    thread: query.get('thread')?.trim() ?? '',
    principal: query.get('principal')?.trim() ?? '',
    since: query.get('since')?.trim() ?? '',
    until: query.get('until')?.trim() ?? '',
    limit: positive(query.get('limit'), DEFAULT_LIMIT, 10_000),
    page: positive(query.get('page'), 1, Number.MAX_SAFE_INTEGER),
  }
  try {
    const page = await listEffects(deps.interlock.store, {
      states: form.states.length > 0 ? parseStates(form.states) : undefined,
      target: form.target || undefined,
      thread: form.thread || undefined,
      principal: form.principal || undefined,
      since: form.since ? parseTime(form.since, 'since') : undefined,
      until: form.until ? parseTime(form.until, 'until') : undefined,
      limit: form.limit,
      page: form.page,
    })
    return { status: 200, page: listPage(form, redactValue(page, deps.interlock.secrets), ctx) }
  } catch (e) {
    if (!(e instanceof UsageError)) throw e
    return { status: 400, page: listPage(form, { error: e.message, hint: e.hint }, ctx) }
  }
}

export async function ambiguousView(deps: ConsoleDeps, query: URLSearchParams, ctx: PageContext): Promise<Html> {
  const page = await listEffects(deps.interlock.store, { states: ['AMBIGUOUS'], limit: DEFAULT_LIMIT, page: positive(query.get('page'), 1, Number.MAX_SAFE_INTEGER) })
  return ambiguousPage(redactValue(page, deps.interlock.secrets), ctx)
}

/** The effect's id from what the URL holds (a whole id, or a unique prefix as the CLI takes). */
export function effectIdOf(deps: ConsoleDeps, typed: string): Promise<string> {
  return resolveEffectId(deps.interlock.store, typed)
}

export async function effectView(deps: ConsoleDeps, effectId: string, ctx: PageContext, session: Session): Promise<Html> {
  const { store, operators, policy, secrets } = deps.interlock
  const snapshot = await store.get(effectId)
  if (!snapshot) throw new NotFoundError(`no effect ${effectId} in the journal`, { hint: 'The Effects page lists them.' })
  let details: EffectDetails | undefined
  let journalProblem: string | undefined
  try {
    details = await effectDetails(store, effectId)
  } catch (e) {
    // A history that fails its check is shown as such, not as a broken page: the operator must see it.
    if (!(e instanceof IntegrityError)) throw e
    journalProblem = e.message
  }
  let timeline: TimelineEntry[] = []
  const view: EffectView = { snapshot, details, journalProblem, timeline, releases: [], relayKeys: deps.relayKeysNote }
  if (details) {
    const seals = await store.seals([...new Set(details.history.map((r) => r.at))])
    view.timeline = timeline = await effectTimeline(details.history, { operators, relays: deps.relayKeys, policy, seals })
    view.releases = details.statements
      .filter((s) => s.statement.kind === 'release' && timeline.find((t) => t.seq === s.seq)?.state === 'HELD')
      .map(({ seq, statement }) => {
        const r = statement as ReleaseStatement
        return { seq, operator: r.operator, signedAt: r.signedAt, expiresAt: r.expiresAt }
      })
    if (snapshot.state === 'HELD') view.quorum = recordedQuorum(details.effect, details.history, { operators, rules: policy })
  }
  const note = session.notes.get(effectId)
  if (note) view.note = note
  return effectPage(redactValue(view, secrets), ctx, deps.cli)
}

function positive(text: string | null, fallback: number, max: number): number {
  const n = Number(text)
  return text !== null && Number.isInteger(n) && n >= 1 ? Math.min(n, max) : fallback
}
