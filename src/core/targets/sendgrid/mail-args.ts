/**
 * The arguments of a SendGrid send, checked once at the edge, and the v3 Mail
 * Send body they become (https://www.twilio.com/docs/sendgrid/api-reference/mail-send/mail-send):
 *
 *   { from: "a@x.org" | { email, name? }, to: address | address[], cc?, bcc?,
 *     subject: string, text?: string, html?: string (at least one of the two),
 *     reply_to?: address, categories?: string[], custom_args?: { [k]: string } }
 *
 * One message, one personalization. The effect id travels as the custom
 * argument `interlock_effect_id`, which SendGrid attaches to every event of
 * the message (webhooks, activity): the way an operator resolving an
 * AMBIGUOUS send finds out whether it went.
 */
import type { JsonObject, JsonValue } from '../../canonical-json.js'
import { InputError } from '../../errors.js'

export const SEND_ACTION = 'send'
export const EFFECT_ARG = 'interlock_effect_id'
const KNOWN = new Set(['from', 'to', 'cc', 'bcc', 'subject', 'text', 'html', 'reply_to', 'categories', 'custom_args'])
// Deliberately loose: SendGrid and the receiving servers are the judges of an address; this catches slips.
const EMAIL = /^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+\.[^\s@<>(),;:"]+$/
/** SendGrid's limit on recipients (to + cc + bcc) of one personalization. */
const MAX_RECIPIENTS = 1000

export interface Address {
  email: string
  name?: string
}

export interface Mail {
  from: Address
  to: Address[]
  cc: Address[]
  bcc: Address[]
  subject: string
  text?: string
  html?: string
  replyTo?: Address
  categories: string[]
  customArgs: Record<string, string>
}

export function parseMail(action: string, args: JsonObject): Mail {
  if (action !== SEND_ACTION) throw new InputError(`a SendGrid target has one action, "${SEND_ACTION}" (got ${JSON.stringify(action)})`)
  const unknown = Object.keys(args).filter((k) => !KNOWN.has(k))
  if (unknown.length > 0) {
    throw new InputError(`unknown mail argument${unknown.length === 1 ? '' : 's'}: ${unknown.map((k) => `args.${k}`).join(', ')}`, {
      hint: `A send takes ${[...KNOWN].join(', ')}.`,
    })
  }
  if (args.from === undefined) throw new InputError('args.from is required: the sender address')
  if (args.to === undefined) throw new InputError('args.to is required: one recipient address or a list of them')
  const mail: Mail = {
    from: address(args.from, 'from'),
    to: addresses(args.to, 'to'),
    cc: args.cc === undefined ? [] : addresses(args.cc, 'cc'),
    bcc: args.bcc === undefined ? [] : addresses(args.bcc, 'bcc'),
    subject: text(args.subject, 'subject'),
    categories: [],
    customArgs: {},
  }
  if (mail.to.length === 0) throw new InputError('args.to must name at least one recipient')
  const all = recipients(mail)
  if (all.length > MAX_RECIPIENTS) throw new InputError(`args.to, cc and bcc name ${all.length} recipients; SendGrid takes at most ${MAX_RECIPIENTS}`)
  const seen = new Set<string>()
  for (const email of all) {
    if (seen.has(email)) throw new InputError(`${email} appears more than once in args.to, cc and bcc; SendGrid refuses a repeated recipient`)
    seen.add(email)
  }
  if (args.text !== undefined) mail.text = text(args.text, 'text')
  if (args.html !== undefined) mail.html = text(args.html, 'html')
  if (mail.text === undefined && mail.html === undefined) throw new InputError('args.text or args.html is required: the body of the message')
  if (args.reply_to !== undefined) mail.replyTo = address(args.reply_to, 'reply_to')
  if (args.categories !== undefined) {
    if (!Array.isArray(args.categories) || !args.categories.every((c) => typeof c === 'string' && c !== '' && c.length <= 255)) {
      throw new InputError('args.categories must be a list of non-empty strings of at most 255 characters')
    }
    mail.categories = args.categories as string[]
  }
  if (args.custom_args !== undefined) {
    const ca = args.custom_args
    if (ca === null || typeof ca !== 'object' || Array.isArray(ca) || !Object.values(ca).every((v) => typeof v === 'string')) {
      throw new InputError('args.custom_args must be an object of string values (SendGrid refuses other values)')
    }
    if (EFFECT_ARG in ca) throw new InputError(`args.custom_args.${EFFECT_ARG} is Interlock's own: it carries the effect id`)
    mail.customArgs = ca as Record<string, string>
  }
  return mail
}

/** Every recipient address, lower-cased: to, then cc, then bcc. */
export function recipients(mail: Mail): string[] {
  return [...mail.to, ...mail.cc, ...mail.bcc].map((a) => a.email.toLowerCase())
}

/** The v3 Mail Send body; the same arguments always give the same body. */
export function mailBody(mail: Mail, effectId: string): JsonObject {
  const personalization: JsonObject = { to: mail.to.map(json) }
  if (mail.cc.length > 0) personalization.cc = mail.cc.map(json)
  if (mail.bcc.length > 0) personalization.bcc = mail.bcc.map(json)
  const content: JsonObject[] = []
  // SendGrid wants text/plain first when both are given.
  if (mail.text !== undefined) content.push({ type: 'text/plain', value: mail.text })
  if (mail.html !== undefined) content.push({ type: 'text/html', value: mail.html })
  const body: JsonObject = {
    personalizations: [personalization],
    from: json(mail.from),
    subject: mail.subject,
    content,
    custom_args: { ...mail.customArgs, [EFFECT_ARG]: effectId },
  }
  if (mail.replyTo) body.reply_to = json(mail.replyTo)
  if (mail.categories.length > 0) body.categories = mail.categories
  return body
}

function json(a: Address): JsonObject {
  return a.name === undefined ? { email: a.email } : { email: a.email, name: a.name }
}

function address(v: JsonValue, arg: string): Address {
  if (typeof v === 'string') return { email: email(v, arg) }
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const out: Address = { email: email(v.email ?? null, `${arg}.email`) }
    if (v.name !== undefined) {
      if (typeof v.name !== 'string') throw new InputError(`args.${arg}.name must be a string`)
      out.name = v.name
    }
    const extra = Object.keys(v).filter((k) => k !== 'email' && k !== 'name')
    if (extra.length > 0) throw new InputError(`args.${arg} takes email and name only (got ${extra.join(', ')})`)
    return out
  }
  throw new InputError(`args.${arg} must be an email address or { email, name } (got ${JSON.stringify(v)})`)
}

function addresses(v: JsonValue, arg: string): Address[] {
  return Array.isArray(v) ? v.map((item, i) => address(item, `${arg}[${i}]`)) : [address(v, arg)]
}

function email(v: JsonValue, arg: string): string {
  if (typeof v !== 'string' || !EMAIL.test(v)) throw new InputError(`args.${arg} must be an email address (got ${JSON.stringify(v)})`)
  return v
}

function text(v: JsonValue | undefined, arg: string): string {
  if (typeof v !== 'string' || v.trim() === '') throw new InputError(`args.${arg} must be a non-empty string`)
  return v
}
