/**
 * One effect: what it is, what holds it or why it is AMBIGUOUS, what an
 * operator can do about it (and the CLI command for each), its args and
 * premises, and its journal as a timeline.
 */
import type { EffectSnapshot } from '../../core/effect.js'
import type { RecordedQuorum } from '../../core/outbox/recorded-quorum.js'
import type { EffectDetails } from '../../core/outbox/show.js'
import type { TimelineEntry } from '../../core/outbox/timeline.js'
import type { ActionNote } from '../session.js'
import { cliCommand, pretty, shortId, stateBadge, type CliFlags } from './format.js'
import { html, type Html } from './html.js'
import { layout, type PageContext } from './layout.js'
import { RESOLUTIONS } from './resolutions.js'
import { timelineTable } from './timeline-view.js'

export interface EffectView {
  snapshot: EffectSnapshot
  /** Undefined when the effect's journal fails its check (journalProblem says how). */
  details?: EffectDetails
  journalProblem?: string
  timeline: TimelineEntry[]
  /** HELD: the releases the journal holds and what they come to. */
  quorum?: RecordedQuorum
  releases: { seq: number; operator: string; signedAt: string; expiresAt: string }[]
  /** How relay signatures were checked, in words. */
  relayKeys: string
  note?: ActionNote
}

export function effectPage(v: EffectView, ctx: PageContext, cli: CliFlags): Html {
  const s = v.snapshot
  const d = v.details
  const e = d?.effect ?? s.effect
  const id = e.id
  const body = html`<h1>Effect <span class="id">${shortId(id)}</span> ${stateBadge(s.state)}</h1>
${v.note ? noteBox(v.note) : ''}
${v.journalProblem ? html`<p class="problem" role="alert">Its journal fails its check: ${v.journalProblem}. Shown from its effects row; nothing can be signed for it.</p>` : ''}
${d?.rowDisagrees ? html`<p class="problem" role="alert">Its effects row disagrees with its journal (${d.rowDisagrees.join(', ')}): shown as journaled. Relays refuse to send it, and the console (like the CLI) refuses to release it.</p>` : ''}
<dl class="facts">
<dt>Id</dt><dd><code>${id}</code></dd>
<dt>State</dt><dd>${stateBadge(s.state)} since ${s.updatedAt}</dd>
<dt>Target</dt><dd>${e.target} (tier ${d?.tier ?? s.tier})</dd>
<dt>Action</dt><dd>${e.action}</dd>
<dt>Thread</dt><dd>${e.thread}</dd>
${e.principal !== undefined ? html`<dt>Principal</dt><dd>${e.principal}</dd>` : ''}
${d?.amount !== undefined ? html`<dt>Amount</dt><dd>${d.amount}</dd>` : ''}
<dt>Created</dt><dd>${s.createdAt}</dd>
${d?.compensates !== undefined ? html`<dt>Compensates</dt><dd><a href="/effects/${d.compensates}">${shortId(d.compensates)}</a></dd>` : ''}
${d ? html`<dt>Digest</dt><dd><code>${d.digest}</code> (what releases sign)</dd>` : ''}
</dl>
${s.state === 'HELD' ? held(v, ctx, cli) : ''}
${s.state === 'AMBIGUOUS' ? ambiguous(v, ctx, cli) : ''}
<div class="columns">
<section aria-labelledby="args"><h2 id="args">Args</h2><pre>${pretty(e.args)}</pre></section>
<section aria-labelledby="premises"><h2 id="premises">Premises</h2><pre>${pretty(e.premises)}</pre></section>
</div>
<section aria-labelledby="journal">
<h2 id="journal">Journal</h2>
<p>${v.relayKeys}</p>
${v.timeline.length > 0 ? timelineTable(v.timeline) : html`<p>No journal records could be read.</p>`}
</section>`
  return layout({ title: `Effect ${shortId(id)}`, section: 'none', ctx, body })
}

function noteBox(n: ActionNote): Html {
  return html`<div class="note ${n.ok ? 'ok' : 'refused'}" role="status">
<p><strong>Your ${n.act}: ${n.ok ? 'done' : 'refused'}</strong> (${n.at}). ${n.text}</p>
${n.hint ? html`<p>${n.hint}</p>` : ''}
<p>The same from a terminal: <code>${n.command}</code></p>
</div>`
}

function held(v: EffectView, ctx: PageContext, cli: CliFlags): Html {
  const d = v.details
  const q = v.quorum
  const id = v.snapshot.effect.id
  const have = q ? (q.complete ? q.signers.length : q.have) : 0
  const need = q?.needed ?? 0
  const mine = ctx.operator !== undefined && v.releases.some((r) => r.operator === ctx.operator)
  return html`<section aria-labelledby="hold">
<h2 id="hold">Held for a release</h2>
<p>Held by rule <strong>${d?.rule ?? '?'}</strong>${d?.ruleReason ? html`: ${d.ruleReason}` : ''}.</p>
<p id="quorum">Releases: <strong>${have} of ${Number.isFinite(need) ? need : '?'}</strong> operators${q?.complete ? html` (the quorum is complete: a relay or <code>interlock reconcile-effects</code> authorizes it)` : ''}.</p>
${v.releases.length > 0
  ? html`<ul class="releases">${v.releases.map((r) => html`<li>Released by operator <strong>${r.operator}</strong> at ${r.signedAt}, valid until ${r.expiresAt} (record ${r.seq})</li>`)}</ul>`
  : ''}
${q && !q.complete ? reasonList(q.reasons) : ''}
${ctx.operator && ctx.csrf
  ? html`<div class="actions">
<form method="post" action="/effects/${id}/release">
<input type="hidden" name="csrf" value="${ctx.csrf}">
<button type="submit" id="release">Sign the release as ${ctx.operator}</button>
<p class="cli">Same as <code>${cliCommand(['outbox', 'release', id], cli)}</code>${mine ? html`; you (${ctx.operator}) have released it already, and count once` : ''}</p>
</form>
<form method="post" action="/effects/${id}/deny">
<input type="hidden" name="csrf" value="${ctx.csrf}">
<label for="deny-reason">Why you deny it (journaled and signed)</label>
<input type="text" id="deny-reason" name="reason" maxlength="500">
<button type="submit" id="deny">Sign the denial as ${ctx.operator} (REJECTED)</button>
<p class="cli">Same as <code>${cliCommand(['outbox', 'release', id, '--deny', '--reason', '<why>'], cli)}</code></p>
</form>
</div>`
  : readOnly(cliCommand(['outbox', 'release', id], cli))}
</section>`
}

function ambiguous(v: EffectView, ctx: PageContext, cli: CliFlags): Html {
  const id = v.snapshot.effect.id
  const why = v.snapshot.detail.reason
  return html`<section aria-labelledby="resolve">
<h2 id="resolve">AMBIGUOUS: nobody can say whether it happened</h2>
${typeof why === 'string' ? html`<p>Why: ${why}</p>` : ''}
<p>Look at the service yourself (the dashboard, the mail log, the channel), then sign what you found:</p>
<dl class="resolutions">
${RESOLUTIONS.map((r) => html`<dt>${r.label} → ${r.to}</dt><dd>${r.does}
${ctx.operator && ctx.csrf
  ? html`<form method="post" action="/effects/${id}/resolve">
<input type="hidden" name="csrf" value="${ctx.csrf}">
<input type="hidden" name="how" value="${r.how}">
<button type="submit" id="resolve-${r.how}">${r.button} (signed as ${ctx.operator})</button>
</form>`
  : ''}
<p class="cli">Same as <code>${cliCommand(['outbox', 'resolve', id, `--${r.how}`], cli)}</code></p></dd>`)}
</dl>
${ctx.operator ? '' : readOnly(cliCommand(['outbox', 'resolve', id, '--applied'], cli))}
</section>`
}

/** Why recorded releases do not count (the count is shown above it). */
function reasonList(reasons: readonly string[]): Html {
  const shown = reasons.filter((r) => !r.startsWith('below quorum') && !r.startsWith('no release recorded yet'))
  return shown.length > 0 ? html`<ul class="reasons">${shown.map((r) => html`<li>${r}</li>`)}</ul>` : html``
}

function readOnly(command: string): Html {
  return html`<p class="readonly" role="note">This console is read-only: it was started without <code>--key</code>, so it can sign nothing. Start it with <code>interlock console --key &lt;your operator key file&gt;</code>, or run <code>${command}</code>.</p>`
}

