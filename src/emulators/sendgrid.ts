/**
 * SendGrid v3, as far as the mail target relies on it, from SendGrid's own
 * documentation:
 *
 * - Mail Send (https://www.twilio.com/docs/sendgrid/api-reference/mail-send/mail-send):
 *   `POST /v3/mail/send`, JSON, `Authorization: Bearer <key>`; `personalizations`
 *   (each with `to`) and `from` required, `subject` and `content` unless a
 *   template supplies them; `custom_args` values must be strings
 *   (https://github.com/sendgrid/sendgrid-nodejs/issues/288); a recipient may
 *   appear once per personalization. Accepted: 202, empty body, an
 *   `X-Message-Id` header (https://sendgrid.com/docs/glossary/x-message-id/).
 * - Errors (https://www.twilio.com/docs/sendgrid/api-reference/how-to-use-the-sendgrid-v3-api/errors):
 *   `{ "errors": [{ "message", "field", "help" }] }`; 400 bad request, 401
 *   bad key, 403 "Too many bad requests. Temporary block" (`temporaryBlock`:
 *   every request is refused so until the block lifts; SendGrid documents no
 *   duration and no Retry-After for it), 429 rate limit (with X-RateLimit-Reset).
 * - Mail Send's own 403: a from address that is not a verified Sender Identity
 *   (`verifiedSenders`), a definite refusal
 *   (https://www.twilio.com/docs/sendgrid/for-developers/sending-email/sender-identity).
 * - Global suppressions (https://www.twilio.com/docs/sendgrid/api-reference/suppressions-global-suppressions/retrieve-a-global-suppression):
 *   `GET /v3/asm/suppressions/global/{email}` answers `{ "recipient_email" }`
 *   when suppressed and `{}` when not.
 *
 * The ledger counts sends per `custom_args.interlock_effect_id`, where the
 * target puts the effect id. SendGrid itself would send each request again:
 * nothing here deduplicates, which is why the target is tier 3.
 */
import { Emulator, type EmulatorRequest, type EmulatorResponse } from './emulator.js'

export interface SentMail {
  messageId: string
  effectId?: string
  body: Record<string, unknown>
}

export class SendgridEmulator extends Emulator {
  readonly sent: SentMail[] = []
  readonly suppressed = new Set<string>()
  private rateLimits = 0
  private blockedUntil = 0
  private seq = 0
  /** The key's scopes, as GET /v3/scopes lists them. */
  scopes = ['mail.send', 'asm.suppressions.global.read']
  /** From addresses that are verified Sender Identities (null: any). */
  verifiedSenders: Set<string> | null = null
  /** The emulator's wall clock, epoch ms. */
  now: () => number = Date.now

  constructor(readonly apiKey = 'SG.emulator.key-for-tests-only') {
    super()
  }

  /** The recipient clicked "unsubscribe from all". */
  suppress(email: string): void {
    this.suppressed.add(email.toLowerCase())
  }

  /** The next `times` sends are answered 429, with X-RateLimit-Reset two seconds ahead. */
  rateLimit(times = 1): void {
    this.rateLimits += times
  }

  /** SendGrid blocks the caller for `seconds` ("Too many bad requests"): every request meanwhile is answered 403. */
  temporaryBlock(seconds: number): void {
    this.blockedUntil = this.now() + seconds * 1000
  }

  sentFor(effectId: string): SentMail[] {
    return this.sent.filter((m) => m.effectId === effectId)
  }

  protected async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return errors(401, [{ message: 'The provided authorization grant is invalid, expired, or revoked', field: null }])
    }
    if (this.now() < this.blockedUntil) return errors(403, [{ message: 'Too many bad requests. Temporary block', field: null }])
    const suppression = /^\/v3\/asm\/suppressions\/global\/([^/]+)$/.exec(req.path)
    if (req.method === 'GET' && suppression) {
      const email = decodeURIComponent(suppression[1]!).toLowerCase()
      return { status: 200, body: this.suppressed.has(email) ? { recipient_email: email } : {} }
    }
    if (req.method === 'POST' && req.path === '/v3/mail/send') return this.send(req)
    // `interlock check`'s probe, read-only: "returns all the scopes assigned to the key you use to authenticate with it"
    // (https://www.twilio.com/docs/sendgrid/api-reference/api-key-permissions/retrieve-a-list-of-scopes-for-which-this-user-has-access).
    if (req.method === 'GET' && req.path === '/v3/scopes') return { status: 200, body: { scopes: [...this.scopes] } }
    return errors(404, [{ message: 'resource not found', field: null }])
  }

  private async send(req: EmulatorRequest): Promise<EmulatorResponse> {
    if (this.rateLimits > 0) {
      this.rateLimits--
      return { ...errors(429, [{ message: 'too many requests', field: null }]), headers: { 'x-ratelimit-reset': String(Math.floor(this.now() / 1000) + 2) } }
    }
    let body: Record<string, unknown>
    try {
      body = JSON.parse(req.body) as Record<string, unknown>
    } catch {
      return errors(400, [{ message: 'Bad Request', field: null }])
    }
    const problems = check(body)
    if (problems.length > 0) return errors(400, problems)
    const from = String((body.from as { email?: unknown }).email).toLowerCase()
    if (this.verifiedSenders && !this.verifiedSenders.has(from)) {
      return errors(403, [{ message: 'The from address does not match a verified Sender Identity. Mail cannot be sent until this error is resolved.', field: 'from' }])
    }
    const customArgs = (body.custom_args ?? {}) as Record<string, string>
    const effectId = customArgs.interlock_effect_id
    return this.apply(req, effectId, () => {
      const messageId = `emu${String(++this.seq).padStart(6, '0')}.filterdrecv`
      this.sent.push({ messageId, effectId, body })
      return { status: 202, headers: { 'x-message-id': messageId } }
    })
  }
}

type Problem = { message: string; field: string | null }

function check(body: Record<string, unknown>): Problem[] {
  const problems: Problem[] = []
  const ps = body.personalizations
  if (!Array.isArray(ps) || ps.length === 0) problems.push({ message: 'The personalizations field is required and must have at least one personalization.', field: 'personalizations' })
  for (const [i, p] of (Array.isArray(ps) ? ps : []).entries()) {
    const to = (p as { to?: unknown }).to
    if (!Array.isArray(to) || to.length === 0) problems.push({ message: 'The to array is required for all personalization objects, and must have at least one email object with a valid email address.', field: `personalizations.${i}.to` })
    const seen = new Set<string>()
    for (const kind of ['to', 'cc', 'bcc']) {
      for (const a of ((p as Record<string, unknown>)[kind] as { email?: string }[] | undefined) ?? []) {
        const e = String(a.email).toLowerCase()
        if (seen.has(e)) problems.push({ message: 'Each email address in the personalization block should be unique between to, cc, and bcc.', field: `personalizations.${i}` })
        seen.add(e)
      }
    }
  }
  if (!body.from || typeof (body.from as { email?: unknown }).email !== 'string') problems.push({ message: 'The from object must be provided for every email send.', field: 'from.email' })
  if (typeof body.subject !== 'string' || body.subject === '') problems.push({ message: 'The subject is required.', field: 'subject' })
  if (!Array.isArray(body.content) || body.content.length === 0) problems.push({ message: 'Unless a valid template_id is provided, the content parameter is required.', field: 'content' })
  const ca = body.custom_args
  if (ca !== undefined && (ca === null || typeof ca !== 'object' || Object.values(ca).some((v) => typeof v !== 'string'))) {
    problems.push({ message: 'Invalid type. Expected: object of strings.', field: 'custom_args' })
  }
  return problems
}

function errors(status: number, list: Problem[]): EmulatorResponse {
  return { status, body: { errors: list.map((p) => ({ ...p, help: null })) } }
}
