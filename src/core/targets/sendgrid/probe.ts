/**
 * `interlock check`'s read-only probe of a SendGrid target: `GET /v3/scopes`,
 * which "returns all the scopes assigned to the key you use to authenticate
 * with it" (https://www.twilio.com/docs/sendgrid/api-reference/api-key-permissions/retrieve-a-list-of-scopes-for-which-this-user-has-access).
 * The target needs `mail.send` to send and
 * `asm.suppressions.global.read` to read its premises (suppressions.ts).
 */
import { serviceMessage } from '../http/body.js'
import { commonProbeAnswer } from '../http/probe-answer.js'
import type { ServiceClient } from '../http/service.js'
import type { ProbeResult } from '../target.js'

export const SENDGRID_SCOPES = ['mail.send', 'asm.suppressions.global.read'] as const

export async function probeSendgrid(api: ServiceClient, signal?: AbortSignal): Promise<ProbeResult> {
  const url = api.url('/v3/scopes')
  const where = api.http.where('GET', url)
  const answer = await api.http.send('GET', url, {}, undefined, signal)
  const common = commonProbeAnswer(answer, where, 'api_key (SENDGRID_API_KEY)')
  if (common) return common
  const scopes = (answer.body as { scopes?: unknown } | null)?.scopes
  if (answer.status !== 200 || !Array.isArray(scopes)) {
    return { ok: false, detail: `${where} answered ${answer.status} to GET /v3/scopes: ${serviceMessage(answer.body)}`, fix: 'Check base_url: it must point at the SendGrid v3 API.' }
  }
  const missing = SENDGRID_SCOPES.filter((s) => !scopes.includes(s))
  if (missing.length > 0) {
    return {
      ok: false,
      detail: `the API key lacks the scope${missing.length === 1 ? '' : 's'} ${missing.join(', ')}`,
      fix: `Give the key ${SENDGRID_SCOPES.join(' and ')} (Settings → API Keys → Restricted Access).`,
    }
  }
  return { ok: true, detail: `GET /v3/scopes answered 200: the key has ${SENDGRID_SCOPES.join(' and ')}` }
}
