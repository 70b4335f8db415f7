/**
 * What a send rests on: that no recipient had unsubscribed from all mail.
 *
 *   { "recipients": { "<address>": { "suppressed": false }, ... } }
 *
 * Read with `GET /v3/asm/suppressions/global/{email}`, which answers the
 * address when it is globally suppressed and `{}` when it is not
 * (https://www.twilio.com/docs/sendgrid/api-reference/suppressions-global-suppressions/retrieve-a-global-suppression).
 * Before dispatch each recipient is read again: one who unsubscribed since the
 * decision is a violation naming the address. A send without captured premises
 * is not checked (SendGrid drops mail to suppressed addresses on its own).
 */
import type { JsonObject } from '../../canonical-json.js'
import type { Premises } from '../../effect.js'
import { TargetError } from '../../errors.js'
import { serviceMessage } from '../http/body.js'
import type { HttpAnswer } from '../http/client.js'
import type { ServiceClient } from '../http/service.js'

/** Requests at once while reading many recipients: enough to be quick, few enough to stay under rate limits. */
const PARALLEL = 8

export async function captureSuppressions(api: ServiceClient, emails: string[]): Promise<Premises> {
  const recipients: JsonObject = {}
  for (const [email, suppressed] of await suppressedNow(api, emails)) recipients[email] = { suppressed }
  return { recipients }
}

export async function checkSuppressions(api: ServiceClient, emails: string[], premises: Premises): Promise<string[]> {
  const was = premises.recipients
  if (was === undefined) return []
  if (was === null || typeof was !== 'object' || Array.isArray(was)) return ['premises.recipients must be { "<address>": { suppressed } } as capture writes it']
  const violations: string[] = []
  for (const [email, suppressed] of await suppressedNow(api, emails.filter((e) => e in was))) {
    const before = (was[email] as JsonObject | null)?.suppressed === true
    if (suppressed && !before) violations.push(`${email} unsubscribed from all mail (global suppression) since the decision`)
  }
  return violations
}

async function suppressedNow(api: ServiceClient, emails: string[]): Promise<Map<string, boolean>> {
  const out = new Map<string, boolean>()
  for (let i = 0; i < emails.length; i += PARALLEL) {
    const batch = emails.slice(i, i + PARALLEL)
    const answers = await Promise.all(batch.map((email) => suppressed(api, email)))
    batch.forEach((email, j) => out.set(email, answers[j]!))
  }
  return out
}

async function suppressed(api: ServiceClient, email: string): Promise<boolean> {
  const url = api.url(`/v3/asm/suppressions/global/${encodeURIComponent(email)}`)
  const where = api.http.where('GET', url)
  let answer: HttpAnswer
  try {
    answer = await api.http.send('GET', url)
  } catch (e) {
    throw new TargetError(`${where}: cannot read the suppression of ${email}: ${(e as Error).message}`, { cause: e })
  }
  const body = answer.body
  if (answer.status !== 200 || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new TargetError(`${where} answered ${answer.status} for the suppression of ${email}; the premises cannot be checked now: ${serviceMessage(body)}`)
  }
  return Object.keys(body).length > 0
}
