/**
 * Who may use the console: whoever opened the one-time link it printed.
 *
 * The link carries a random token. The first request with it spends it and
 * gets a session cookie (HttpOnly: no script reads it; SameSite=Strict: no
 * other site's page makes the browser send it); the token opens nothing
 * afterwards, so a link left in a terminal's scrollback or a shell history
 * is worth nothing once used. Each session has its own CSRF token, which
 * every form posts back: an action needs the cookie, the console's own
 * Origin (host-guard) and that token.
 *
 * Tokens are compared in constant time. Sessions live in this process only:
 * stopping the console ends them all.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'

export const COOKIE = 'interlock_console'

export interface ActionNote {
  /** release, denial or resolution */
  act: string
  at: string
  ok: boolean
  text: string
  /** What the operator would have typed instead. */
  command: string
  hint?: string
}

export interface Session {
  id: string
  csrf: string
  /** The outcome of this session's last action on each effect, shown on its page until the next one. */
  notes: Map<string, ActionNote>
}

export type TokenCheck = { ok: true; session: Session } | { ok: false; why: string }

export class Sessions {
  private token: string | null = secret()
  private spent: string | null = null
  private readonly sessions = new Map<string, Session>()

  /** The one-time token, for the printed link; null once spent. */
  get pendingToken(): string | null {
    return this.token
  }

  /** Spends the token when `given` is it: a new session. */
  redeem(given: string): TokenCheck {
    if (this.spent !== null && same(given, this.spent)) return { ok: false, why: 'this link was used already: each link opens one browser session, once' }
    if (this.token === null || !same(given, this.token)) return { ok: false, why: 'this link\'s token is not the one the console printed' }
    this.spent = this.token
    this.token = null
    const session: Session = { id: secret(), csrf: secret(), notes: new Map() }
    this.sessions.set(session.id, session)
    return { ok: true, session }
  }

  /** The session the request's cookie names, if any. */
  fromCookie(header: string | undefined): Session | undefined {
    const id = cookieValue(header, COOKIE)
    if (id === undefined) return undefined
    for (const [key, s] of this.sessions) if (same(id, key)) return s
    return undefined
  }

  static setCookie(session: Session): string {
    return `${COOKIE}=${session.id}; HttpOnly; SameSite=Strict; Path=/`
  }

  static csrfMatches(session: Session, given: string | undefined): boolean {
    return given !== undefined && same(given, session.csrf)
  }
}

function secret(): string {
  return randomBytes(32).toString('base64url')
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined
  for (const part of header.split(';')) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim()
  }
  return undefined
}
