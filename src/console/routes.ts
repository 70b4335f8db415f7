/**
 * Every request, in the order its checks must come:
 *
 * 1. Host and Origin (host-guard, as `mcp-proxy --http` checks them): a
 *    request under a name that is not the console's, or from another
 *    origin's page, is refused 403 before anything else (DNS rebinding,
 *    cross-site requests).
 * 2. The static assets, which hold nothing of the outbox.
 * 3. The one-time token (session.ts): spent on first use for a session cookie.
 * 4. The session cookie: without it, 401.
 * 5. The page, the event stream, or (POST) an action, which also needs the
 *    session's CSRF token and an operator key.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { InterlockError, NotFoundError, StoreUnavailableError, UsageError } from '../core/errors.js'
import type { HostGuard } from '../integrations/mcp/http-guard.js'
import { ACTIONS, runAction, type ActionKind } from './actions.js'
import type { Assets } from './assets.js'
import type { ConsoleDeps } from './deps.js'
import { FormError, readForm, redirect, SECURITY_HEADERS, sendAsset, sendPage } from './http.js'
import type { ChangeFeed } from './live.js'
import { ambiguousView, effectIdOf, effectView, listView, statusView } from './pages.js'
import { Sessions, type Session } from './session.js'
import { messagePage, type PageContext } from './views/layout.js'

export interface RouteContext {
  deps: ConsoleDeps
  sessions: Sessions
  guard: HostGuard
  feed: ChangeFeed
  assets: Assets
  log: (line: string) => void
}

const EFFECT = /^\/effects\/([^/]+)$/
const EFFECT_ACTION = /^\/effects\/([^/]+)\/([a-z]+)$/

export function handleRequest(c: RouteContext, req: IncomingMessage, res: ServerResponse): void {
  route(c, req, res).catch((e: unknown) => failed(c, res, e))
}

async function route(c: RouteContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const secrets = c.deps.interlock.secrets
  const refusal = c.guard.refusal(req.headers)
  if (refusal) {
    c.log(`refused ${req.method} ${pathOf(req.url)}: ${refusal}`)
    return sendPage(res, 403, messagePage({ title: 'Refused', message: `${refusal}. The console answers only its own pages, at the address it printed.` }), secrets)
  }
  const url = new URL(req.url ?? '/', 'http://console.invalid')
  const method = req.method ?? 'GET'

  if (method === 'GET' && url.pathname.startsWith('/assets/')) {
    const asset = c.assets.get(url.pathname.slice('/assets/'.length))
    if (asset) return sendAsset(res, asset.type, asset.body)
  }

  // Browsers ask for it on their own; there is none, and asking is no reason for a 401 page.
  if (method === 'GET' && url.pathname === '/favicon.ico') return void res.writeHead(204, SECURITY_HEADERS).end()

  const cookieSession = c.sessions.fromCookie(req.headers.cookie)
  if (method === 'GET' && url.searchParams.has('token')) {
    const clean = new URL(url)
    clean.searchParams.delete('token')
    const to = `${clean.pathname}${clean.search}`
    // A browser that already has its session reopening the printed link is let through to the page.
    if (cookieSession && c.sessions.pendingToken === null) return redirect(res, to)
    const r = c.sessions.redeem(url.searchParams.get('token') ?? '')
    if (!r.ok) {
      c.log(`refused a link: ${r.why}`)
      return sendPage(res, 403, messagePage({ title: 'Link refused', message: `${r.why}.`, hint: 'Start the console again (`interlock console`) for a new link; the old one stays spent.' }), secrets)
    }
    c.log('a browser opened the console link; the link is now spent')
    return redirect(res, to, { 'set-cookie': Sessions.setCookie(r.session) })
  }

  const session = cookieSession
  if (!session) {
    return sendPage(res, 401, messagePage({ title: 'Not signed in', message: 'This browser has no console session.', hint: 'Open the link `interlock console` printed when it started (it works once); to get a new one, start the console again.' }), secrets)
  }
  const ctx = async (): Promise<PageContext> => ({ operator: c.deps.key?.name, csrf: session.csrf, version: await c.feed.current() })

  if (method === 'POST') {
    const m = EFFECT_ACTION.exec(url.pathname)
    if (!m || !ACTIONS.includes(m[2] as ActionKind)) return notFound(c, res, await ctx())
    return act(c, req, res, session, m[1]!, m[2] as ActionKind)
  }
  if (method !== 'GET') {
    return sendPage(res, 405, messagePage({ title: 'Not allowed', message: `${method} is not a method the console answers.` }), secrets, { allow: 'GET, POST' })
  }
  if (url.pathname === '/') return sendPage(res, 200, await statusView(c.deps, await ctx()), secrets)
  if (url.pathname === '/effects') {
    const r = await listView(c.deps, url.searchParams, await ctx())
    return sendPage(res, r.status, r.page, secrets)
  }
  if (url.pathname === '/ambiguous') return sendPage(res, 200, await ambiguousView(c.deps, url.searchParams, await ctx()), secrets)
  if (url.pathname === '/events') return c.feed.attach(res)
  const one = EFFECT.exec(url.pathname)
  if (one) {
    const id = await effectIdOf(c.deps, decodeURIComponent(one[1]!))
    return sendPage(res, 200, await effectView(c.deps, id, await ctx(), session), secrets)
  }
  // An action's address reloaded (or fetched by live updates after a POST): its effect's page.
  const action = EFFECT_ACTION.exec(url.pathname)
  if (action && ACTIONS.includes(action[2] as ActionKind)) return redirect(res, `/effects/${encodeURIComponent(action[1]!)}`)
  return notFound(c, res, await ctx())
}

async function act(c: RouteContext, req: IncomingMessage, res: ServerResponse, session: Session, typed: string, kind: ActionKind): Promise<void> {
  const secrets = c.deps.interlock.secrets
  const form = await readForm(req)
  if (!Sessions.csrfMatches(session, form.get('csrf') ?? undefined)) {
    c.log(`refused a ${kind}: the form's CSRF token is missing or not this session's`)
    return sendPage(res, 403, messagePage({ title: 'Refused', message: 'The form did not carry this session\'s CSRF token: nothing was signed.', hint: 'Use the buttons on the console\'s own pages.' }), secrets)
  }
  if (!c.deps.key) {
    c.log(`refused a ${kind}: read-only (no --key)`)
    return sendPage(res, 403, messagePage({ title: 'Read-only', message: 'This console was started without --key: it can sign nothing, and nothing was signed.', hint: 'Start it with `interlock console --key <your operator key file>` to release, deny and resolve.' }), secrets)
  }
  const id = await effectIdOf(c.deps, decodeURIComponent(typed))
  const note = await runAction(c.deps, id, kind, form)
  session.notes.set(id, note)
  c.log(`${kind} of effect ${id} by operator ${c.deps.key.name}: ${note.ok ? 'done' : 'refused'}: ${note.text}`)
  return redirect(res, `/effects/${id}`)
}

function notFound(c: RouteContext, res: ServerResponse, ctx: PageContext): void {
  sendPage(res, 404, messagePage({ title: 'Not found', message: 'No such page.', hint: 'The navigation above leads to every page.', ctx: { operator: ctx.operator, csrf: ctx.csrf } }), c.deps.interlock.secrets)
}

function failed(c: RouteContext, res: ServerResponse, e: unknown): void {
  const status =
    e instanceof FormError ? e.status : e instanceof NotFoundError ? 404 : e instanceof UsageError ? 400 : e instanceof StoreUnavailableError ? 503 : 500
  if (status === 500) c.log(`error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`)
  if (res.headersSent) {
    res.destroy()
    return
  }
  const message = e instanceof Error ? e.message : String(e)
  const hint = e instanceof InterlockError ? e.hint : undefined
  sendPage(res, status, messagePage({ title: status === 404 ? 'Not found' : status === 503 ? 'Store unavailable' : 'Something went wrong', message, hint }), c.deps.interlock.secrets)
}

function pathOf(url: string | undefined): string {
  // The query may carry a token: never logged.
  return (url ?? '/').split('?')[0]!
}
