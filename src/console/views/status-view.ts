/** The status page: what `interlock outbox status` prints, as a page. */
import { STATES } from '../../core/lifecycle.js'
import type { OutboxStatus, WaitingEffect } from '../../core/outbox/status.js'
import { ago, effectLink, stateBadge } from './format.js'
import { href, html, type Html } from './html.js'
import { layout, type PageContext } from './layout.js'

export function statusPage(s: OutboxStatus, ctx: PageContext): Html {
  const o = s.oldestInFlight
  const body = html`<h1>Outbox status</h1>
<div class="columns">
<section aria-labelledby="counts">
<h2 id="counts">Effects per state</h2>
<table>
<thead><tr><th scope="col">State</th><th scope="col" class="num">Effects</th></tr></thead>
<tbody>${STATES.map((st) => html`<tr><th scope="row"><a href="${href('/effects', { state: st })}">${st}</a></th><td class="num" data-state="${st}">${s.counts[st]}</td></tr>`)}</tbody>
<tfoot><tr><th scope="row">All</th><td class="num">${s.total}</td></tr></tfoot>
</table>
<h2>Oldest in flight</h2>
${o ? html`<p>${effectLink(o.effectId)} ${stateBadge(o.state)} since ${o.since} (${ago(o.ageMs)}).</p>` : html`<p>Nothing in flight.</p>`}
</section>
<section aria-labelledby="relays">
<h2 id="relays">Relays</h2>
${s.relays.length === 0
  ? html`<p>No relay heartbeats recorded.</p>`
  : html`<table>
<thead><tr><th scope="col">Relay</th><th scope="col">State</th><th scope="col">Last heartbeat</th><th scope="col">Started</th></tr></thead>
<tbody>${s.relays.map((r) => html`<tr><td>${r.relay}</td><td><span class="relay relay-${r.state}">${r.state}</span></td><td>${r.lastSeen} (${ago(r.lastSeenAgoMs)})</td><td>${r.startedAt}</td></tr>`)}</tbody>
</table>`}
</section>
</div>
${waiting('held', 'HELD, waiting for a release', s.held, 'Rule and why')}
${waiting('ambiguous', 'AMBIGUOUS, waiting for a resolution', s.ambiguous, 'Why')}
${s.refused.length > 0
  ? html`<section aria-labelledby="refused"><h2 id="refused">Refused by a relay before sending</h2>
<p>Nothing was sent; the relay's log says more.</p>
<table>
<thead><tr><th scope="col">Effect</th><th scope="col">Relay</th><th scope="col">Target</th><th scope="col">At</th><th scope="col">Why</th></tr></thead>
<tbody>${s.refused.map((r) => html`<tr><td>${effectLink(r.effectId)}</td><td>${r.relay}</td><td>${r.target}</td><td>${r.at}</td><td>${r.why}</td></tr>`)}</tbody>
</table></section>`
  : ''}`
  return layout({ title: 'Status', section: 'status', ctx, body })
}

function waiting(id: string, title: string, list: readonly WaitingEffect[], why: string): Html {
  return html`<section aria-labelledby="${id}">
<h2 id="${id}">${title} (${list.length})</h2>
${list.length === 0
  ? html`<p>None.</p>`
  : html`<table>
<thead><tr><th scope="col">Effect</th><th scope="col">Target</th><th scope="col">Action</th><th scope="col">Thread</th><th scope="col">Since</th><th scope="col">${why}</th></tr></thead>
<tbody>${list.map((w) => html`<tr><td>${effectLink(w.effectId)}</td><td>${w.target}</td><td>${w.action}</td><td>${w.thread}</td><td>${w.since}</td><td>${w.why}</td></tr>`)}</tbody>
</table>`}
</section>`
}
