/**
 * `interlock check`'s read-only probe of a Slack target: `auth.test`, which
 * "checks authentication & identity" and needs no scope
 * (https://docs.slack.dev/reference/methods/auth.test). Slack answers
 * HTTP 200 with `ok: false` and an error code for a bad token
 * (`invalid_auth`, `not_authed`, `token_revoked`, ...).
 */
import { commonProbeAnswer } from '../http/probe-answer.js'
import type { ServiceClient } from '../http/service.js'
import type { ProbeResult } from '../target.js'

const REFUSED = new Set(['invalid_auth', 'not_authed', 'token_revoked', 'token_expired', 'account_inactive', 'not_allowed_token_type'])

export async function probeSlack(api: ServiceClient, signal?: AbortSignal): Promise<ProbeResult> {
  const url = api.url('/api/auth.test')
  const where = api.http.where('POST', url)
  const answer = await api.http.send('POST', url, { 'content-type': 'application/json; charset=utf-8' }, '{}', signal)
  const common = commonProbeAnswer(answer, where, 'token (SLACK_TOKEN)')
  if (common) return common
  const body = (answer.body ?? {}) as { ok?: unknown; error?: unknown; team?: unknown; user?: unknown }
  if (answer.status === 200 && body.ok === true) {
    return { ok: true, detail: `auth.test: token accepted (team ${String(body.team ?? '?')}, user ${String(body.user ?? '?')})` }
  }
  const error = typeof body.error === 'string' ? body.error : `HTTP ${answer.status}`
  if (REFUSED.has(error)) {
    return { ok: false, credentialRefused: true, detail: `auth.test answered ${error}: the token was refused`, fix: 'Check token (SLACK_TOKEN): a current bot token (xoxb-...) of the workspace.' }
  }
  return { ok: false, detail: `${where}: auth.test answered ${error}`, fix: 'Check base_url: it must point at the Slack Web API (https://slack.com).' }
}
