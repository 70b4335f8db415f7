/** Effects filtered by state, target, thread, principal and time, a page at a time: `interlock outbox list` as a page. */
import { STATES } from '../../core/lifecycle.js'
import type { ListPage } from '../../core/outbox/list.js'
import { effectLink, stateBadge } from './format.js'
import { href, html, type Html } from './html.js'
import { layout, type PageContext } from './layout.js'

/** The filters as typed (kept as text, to fill the form in again). */
export interface ListForm {
  states: string[]
  target: string
  thread: string
  principal: string
  since: string
  until: string
  limit: number
  page: number
}

export function listPage(form: ListForm, page: ListPage | { error: string; hint?: string }, ctx: PageContext): Html {
  const held = form.states.length === 1 && form.states[0]!.toUpperCase() === 'HELD' && !form.target && !form.thread && !form.principal && !form.since && !form.until
  const params = { state: form.states, target: form.target, thread: form.thread, principal: form.principal, since: form.since, until: form.until, limit: form.limit === 50 ? undefined : form.limit }
  const body = html`<h1>Effects</h1>
<form method="get" action="/effects" class="filters">
<fieldset><legend>State</legend>
${STATES.map((s) => html`<label><input type="checkbox" name="state" value="${s}"${form.states.some((x) => x.toUpperCase() === s) ? html` checked` : ''}> ${s}</label>`)}
</fieldset>
<div class="fields">
${field('target', 'Target', form.target)}
${field('thread', 'Thread', form.thread)}
${field('principal', 'Principal', form.principal, 'e.g. token:ci-bot')}
${field('since', 'Created at or after', form.since, 'ISO-8601, e.g. 2026-01-31T12:00:00Z')}
${field('until', 'Created before', form.until, 'ISO-8601')}
<label>Per page <input type="number" name="limit" min="1" max="10000" value="${form.limit}"></label>
<button type="submit">Filter</button>
</div>
</form>
${'error' in page
  ? html`<p class="problem" role="alert">${page.error}</p>${page.hint ? html`<p>${page.hint}</p>` : ''}`
  : results(page, params)}`
  return layout({ title: 'Effects', section: held ? 'held' : 'effects', ctx, body })
}

function field(name: string, label: string, value: string, placeholder?: string): Html {
  return html`<label>${label} <input type="text" name="${name}" value="${value}"${placeholder ? html` placeholder="${placeholder}"` : ''}></label>`
}

function results(page: ListPage, params: Record<string, string | number | string[] | undefined>): Html {
  if (page.effects.length === 0) return html`<p>${page.page === 1 ? 'No effects match.' : `No effects on page ${page.page}.`}</p>`
  const principals = page.effects.some((e) => e.principal !== undefined)
  return html`<table class="effects">
<caption>Newest first; page ${page.page}${page.more ? '' : ', the last'}.</caption>
<thead><tr><th scope="col">Effect</th><th scope="col">State</th><th scope="col">Target</th><th scope="col">Action</th><th scope="col">Thread</th>${principals ? html`<th scope="col">Principal</th>` : ''}<th scope="col">Created</th></tr></thead>
<tbody>${page.effects.map((e) => html`<tr><td>${effectLink(e.effectId)}</td><td>${stateBadge(e.state)}</td><td>${e.target}</td><td>${e.action}</td><td>${e.thread}</td>${principals ? html`<td>${e.principal ?? '-'}</td>` : ''}<td>${e.createdAt}</td></tr>`)}</tbody>
</table>
<nav aria-label="Pages" class="pager">
${page.page > 1 ? html`<a href="${href('/effects', { ...params, page: page.page - 1 })}" rel="prev">Newer</a>` : ''}
<span>Page ${page.page}</span>
${page.more ? html`<a href="${href('/effects', { ...params, page: page.page + 1 })}" rel="next">Older</a>` : ''}
</nav>`
}
