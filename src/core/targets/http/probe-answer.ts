/**
 * The shared reading of a probe's HTTP answer (`interlock check`): 401 means
 * the credential was refused, 429 and 5xx mean the service is there but could
 * not answer now, anything else is for the caller to read. Names the request
 * by method and origin only, as every target error does (client.ts).
 */
import type { ProbeResult } from '../target.js'
import { serviceMessage } from './body.js'
import type { HttpAnswer } from './client.js'

/** A ProbeResult for answers every service means the same way, or null to let the caller read it. */
export function commonProbeAnswer(answer: HttpAnswer, where: string, credential: string): ProbeResult | null {
  if (answer.status === 401) {
    return {
      ok: false,
      credentialRefused: true,
      detail: `${where} answered 401: the credential was refused (${serviceMessage(answer.body)})`,
      fix: `Check ${credential}: it must be a current, unrevoked credential for this account.`,
    }
  }
  if (answer.status === 429 || answer.status >= 500) {
    return {
      ok: false,
      detail: `${where} answered ${answer.status}: ${serviceMessage(answer.body)}`,
      fix: 'The service is up but could not answer now; run the check again, and look at the service\'s status page if it persists.',
    }
  }
  return null
}
