/**
 * Twilio's Programmable Messaging API, as far as an http target declared for
 * it in interlock.toml relies on it, from Twilio's own documentation:
 *
 * - Base URL and authentication (https://www.twilio.com/docs/iam/api): every
 *   URL starts https://api.twilio.com/2010-04-01; HTTP Basic authentication,
 *   the Account SID as user name and the Auth Token as password. A request
 *   without them is answered 401 with error 20003.
 * - Create a Message (https://www.twilio.com/docs/sms/api/message-resource;
 *   the operation CreateMessage, POST /2010-04-01/Accounts/{AccountSid}/Messages.json,
 *   in twilio-go's generated reference, rest/api/v2010/docs/AccountsMessagesApi.md):
 *   form-encoded `To` (E.164, required), `From` or `MessagingServiceSid`,
 *   `Body` (up to 1,600 characters) or `MediaUrl` (repeatable). Answered 201
 *   with the Message resource: `sid` (SM + 32 hex), `account_sid`, `to`,
 *   `from`, `body`, `status` "queued" (or "accepted" through a Messaging
 *   Service), `num_segments`, `direction` "outbound-api", `api_version`,
 *   `date_created` and `date_updated` (RFC 2822), `uri`.
 * - Errors are JSON {code, message, more_info, status}
 *   (https://www.twilio.com/docs/api/errors): 21211 Invalid 'To' Phone Number,
 *   400 (https://www.twilio.com/docs/api/errors/21211: not E.164, a `+`
 *   then the country code and number, no spaces or dashes; To and From the
 *   same number); 21604 a 'To' phone number is required; 21602 message body
 *   is required; 20404 the requested resource was not found.
 * - 429 (error 20429, Too Many Requests): "When an API request receives an
 *   Error 429 response, this request is never processed. Any requests with
 *   Error 429 responses are always safe to retry."
 *   (https://support.twilio.com/hc/en-us/articles/360044308153); 429 and 5xx
 *   are the retryable statuses, 400, 401, 403, 404, 405 and 422 the terminal
 *   ones (https://support.twilio.com/hc/en-us/articles/48916449686299,
 *   "Handling Twilio REST API Error Codes and Implementing Retry Logic").
 *   `throttleNext()` answers the next create 429 with Retry-After: 1.
 * - Fetch a Message: GET .../Messages/{Sid}.json; read Messages: GET
 *   .../Messages.json, filters `To` and `From`, newest first,
 *   {messages, page, page_size, uri, ...}.
 *
 * I-Twilio-Idempotency-Token. Twilio documents this header as the one it
 * sends with each of its webhook requests, unique per event, so that a
 * receiver can drop a retried one (https://www.twilio.com/docs/usage/webhooks/webhooks-faq,
 * webhooks-connection-overrides). The pages found say nothing about the
 * Messages API honouring it on requests sent to Twilio. This emulator
 * honours it, as the issue this target's tier-1 declaration rests on
 * assumes: a create carrying a token already seen creates nothing and
 * answers the first create's message again. `honoursToken = false` is the
 * API as its reference documents it (no deduplication): a tier-1
 * declaration is then wrong, which the tests show. Confirm with Twilio
 * before declaring Messages tier 1 against the real API.
 *
 * The ledger counts messages created per token (the effect id).
 */
import { Emulator, type EmulatorRequest, type EmulatorResponse } from './emulator.js'

export interface TwilioMessage {
  sid: string
  account_sid: string
  to: string
  from: string | null
  messaging_service_sid: string | null
  body: string
  status: 'queued' | 'accepted'
  num_segments: string
  num_media: string
  direction: 'outbound-api'
  api_version: '2010-04-01'
  date_created: string
  date_updated: string
  date_sent: null
  price: null
  error_code: null
  error_message: null
  uri: string
}

const E164 = /^\+[1-9]\d{1,14}$/
const API = '/2010-04-01'

export class TwilioEmulator extends Emulator {
  readonly messages: TwilioMessage[] = []
  /** Messages created per idempotency token: what a retry with it gets back. */
  private readonly byToken = new Map<string, TwilioMessage>()
  private throttled = 0
  private seq = 0
  /** False: the API as its reference documents it, no deduplication by token. */
  honoursToken = true

  constructor(
    readonly accountSid = 'AC00000000000000000000000000000001',
    readonly authToken = 'twilio_test_auth_token_9f8e7d6c5b4a',
  ) {
    super()
  }

  /** The Authorization header value a client sends (Basic, the Account SID and Auth Token). */
  get basicAuth(): string {
    return `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`
  }

  /** The next create meets Twilio's concurrency limit: 429, error 20429, nothing created. */
  throttleNext(times = 1): void {
    this.throttled += times
  }

  messagesFor(token: string): TwilioMessage[] {
    const m = this.byToken.get(token)
    return m ? [m] : []
  }

  protected override injectedError(_req: EmulatorRequest, status: number): EmulatorResponse {
    return error(status, 20500, 'An internal server error has occurred')
  }

  protected async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    const account = new RegExp(`^${API}/Accounts/([^/]+)/Messages(?:/([^/]+))?\\.json$`).exec(req.path)
    if (!account) return error(404, 20404, 'The requested resource was not found')
    if (req.headers.authorization !== this.basicAuth || decodeURIComponent(account[1]!) !== this.accountSid) {
      return error(401, 20003, 'Authenticate')
    }
    const sid = account[2] === undefined ? undefined : decodeURIComponent(account[2])
    if (req.method === 'POST' && sid === undefined) return this.create(req)
    if (req.method === 'GET' && sid !== undefined) {
      const m = this.messages.find((x) => x.sid === sid)
      return m ? { status: 200, body: m } : error(404, 20404, `The requested resource ${req.path} was not found`)
    }
    if (req.method === 'GET') return this.list(req)
    return error(405, 20004, 'Method not allowed')
  }

  private async create(req: EmulatorRequest): Promise<EmulatorResponse> {
    if (this.throttled > 0) {
      this.throttled--
      return { ...error(429, 20429, 'Too Many Requests'), headers: { 'retry-after': '1' } }
    }
    const token = typeof req.headers['i-twilio-idempotency-token'] === 'string' ? req.headers['i-twilio-idempotency-token'] : undefined
    const seen = token && this.honoursToken ? this.byToken.get(token) : undefined
    if (seen) return { status: 201, body: seen }
    const form = new URLSearchParams(req.body)
    const to = form.get('To')
    const from = form.get('From')
    const service = form.get('MessagingServiceSid')
    const body = form.get('Body') ?? ''
    if (!to) return error(400, 21604, "A 'To' phone number is required.")
    if (!E164.test(to) || to === from) return error(400, 21211, `Invalid 'To' Phone Number: ${to}`)
    if (!from && !service) return error(400, 21603, "A 'From' phone number is required.")
    if (body === '' && form.getAll('MediaUrl').length === 0) return error(400, 21602, 'Message body is required.')
    if (body.length > 1600) return error(400, 21617, 'The concatenated message body exceeds the 1600 character limit.')
    return this.apply(req, token, () => {
      const now = new Date().toUTCString().replace('GMT', '+0000')
      const msid = `SM${(++this.seq).toString(16).padStart(32, '0')}`
      const m: TwilioMessage = {
        sid: msid,
        account_sid: this.accountSid,
        to,
        from,
        messaging_service_sid: service,
        body,
        status: service ? 'accepted' : 'queued',
        num_segments: String(Math.max(1, Math.ceil(body.length / 160))),
        num_media: String(form.getAll('MediaUrl').length),
        direction: 'outbound-api',
        api_version: '2010-04-01',
        date_created: now,
        date_updated: now,
        date_sent: null,
        price: null,
        error_code: null,
        error_message: null,
        uri: `${API}/Accounts/${this.accountSid}/Messages/${msid}.json`,
      }
      this.messages.push(m)
      if (token) this.byToken.set(token, m)
      return { status: 201, body: m }
    })
  }

  private list(req: EmulatorRequest): EmulatorResponse {
    const to = req.query.get('To')
    const from = req.query.get('From')
    const size = Math.min(1000, Number(req.query.get('PageSize') ?? 50))
    const found = this.messages.filter((m) => (!to || m.to === to) && (!from || m.from === from)).reverse()
    return { status: 200, body: { messages: found.slice(0, size), page: 0, page_size: size, start: 0, end: Math.min(size, found.length) - 1, uri: req.path } }
  }
}

function error(status: number, code: number, message: string): EmulatorResponse {
  return { status, body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status } }
}
