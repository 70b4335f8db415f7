/**
 * The frame of every page: a skip link, the navigation (real links), who
 * signs or that the console is read-only, the page's content in <main>
 * (what live updates replace), and a polite live region that says when the
 * page last updated. The page's version is the outbox fingerprint it was
 * rendered at (live.ts).
 */
import { html, type Html } from './html.js'

export type Section = 'status' | 'effects' | 'held' | 'ambiguous' | 'none'

export interface PageContext {
  /** The operator the console signs as; undefined: read-only (started without --key). */
  operator?: string
  csrf?: string
  version?: string
}

const NAV: [Section, string, string][] = [
  ['status', '/', 'Status'],
  ['effects', '/effects', 'Effects'],
  ['held', '/effects?state=HELD', 'Held'],
  ['ambiguous', '/ambiguous', 'AMBIGUOUS'],
]

export function layout(o: { title: string; section: Section; ctx: PageContext; body: Html; live?: boolean }): Html {
  const live = o.live !== false && o.ctx.version !== undefined
  const who = o.ctx.operator
    ? html`<p class="who">Signing as operator <strong>${o.ctx.operator}</strong></p>`
    : o.ctx.csrf
      ? html`<p class="who">Read-only: started without <code>--key</code></p>`
      : ''
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · Interlock console</title>
${o.ctx.csrf ? html`<meta name="csrf" content="${o.ctx.csrf}">` : ''}
<link rel="stylesheet" href="/assets/console.css">
${live ? html`<script src="/assets/console.js" defer></script>` : ''}
</head>
<body${live ? html` data-version="${o.ctx.version}"` : ''}>
<a class="skip" href="#main">Skip to content</a>
<header>
<p class="brand"><a href="/">Interlock console</a></p>
<nav aria-label="Main"><ul>${NAV.map(([s, path, label]) => html`<li><a href="${path}"${s === o.section ? html` aria-current="page"` : ''}>${label}</a></li>`)}</ul></nav>
${who}
</header>
<main id="main" tabindex="-1">
${o.body}
</main>
<footer>${live ? html`<p id="live-status" role="status" aria-live="polite">Live updates: connecting…</p>` : ''}</footer>
</body>
</html>
`
}

/** A page that says why the request was refused or failed, with what to do. */
export function messagePage(o: { title: string; message: string; hint?: string; ctx?: PageContext }): Html {
  const body = html`<h1>${o.title}</h1>
<p class="problem" role="alert">${o.message}</p>
${o.hint ? html`<p>${o.hint}</p>` : ''}`
  return layout({ title: o.title, section: 'none', ctx: o.ctx ?? {}, body, live: false })
}
