/** Every AMBIGUOUS effect with why, and what each resolution does. */
import type { ListPage } from '../../core/outbox/list.js'
import { effectLink } from './format.js'
import { href, html, type Html } from './html.js'
import { layout, type PageContext } from './layout.js'
import { RESOLUTIONS } from './resolutions.js'

export function ambiguousPage(page: ListPage, ctx: PageContext): Html {
  const body = html`<h1>AMBIGUOUS effects</h1>
<p>A target could not say whether these happened; nothing is re-sent on its own. Open one to sign what you found at the service.</p>
${page.effects.length === 0
  ? html`<p>None waits.</p>`
  : html`<table>
<caption>Newest first; page ${page.page}${page.more ? '' : ', the last'}.</caption>
<thead><tr><th scope="col">Effect</th><th scope="col">Target</th><th scope="col">Action</th><th scope="col">Thread</th><th scope="col">Since</th><th scope="col">Why</th></tr></thead>
<tbody>${page.effects.map((e) => html`<tr><td>${effectLink(e.effectId)}</td><td>${e.target}</td><td>${e.action}</td><td>${e.thread}</td><td>${e.updatedAt}</td><td>${typeof e.detail.reason === 'string' ? e.detail.reason : ''}</td></tr>`)}</tbody>
</table>
<nav aria-label="Pages" class="pager">
${page.page > 1 ? html`<a href="${href('/ambiguous', { page: page.page - 1 })}" rel="prev">Newer</a>` : ''}
<span>Page ${page.page}</span>
${page.more ? html`<a href="${href('/ambiguous', { page: page.page + 1 })}" rel="next">Older</a>` : ''}
</nav>`}
<section aria-labelledby="what">
<h2 id="what">What each resolution does</h2>
<dl class="resolutions">${RESOLUTIONS.map((r) => html`<dt>${r.label} → ${r.to} (<code>--${r.how}</code>)</dt><dd>${r.does}</dd>`)}</dl>
</section>`
  return layout({ title: 'AMBIGUOUS', section: 'ambiguous', ctx, body })
}
