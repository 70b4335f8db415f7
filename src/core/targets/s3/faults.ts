/**
 * What S3's answers mean, as DispatchFault kinds. S3 words an error as XML,
 * `<Error><Code>…</Code><Message>…</Message></Error>`; a HEAD answers with a
 * status only.
 *
 * - 412 PreconditionFailed (If-Match / If-None-Match did not hold), and 404 on
 *   a write conditioned on If-Match (the object it rested on is gone) → 'premise';
 * - 409 ConditionalRequestConflict (a concurrent conditional write) → 'retry-later':
 *   the retry's precondition then decides;
 * - other 4xx (SignatureDoesNotMatch, AccessDenied, NoSuchBucket, …) → 'refused';
 * - 5xx (InternalError, SlowDown) → 'unknown', as the shared rules say.
 *
 * https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
 */
import { DispatchFault } from '../../errors.js'
import { faultFromStatus } from '../http/faults.js'
import type { HttpResponse } from './transport.js'

export interface S3Error {
  code: string
  message: string
}

export function s3Error(res: HttpResponse): S3Error {
  const pick = (tag: string) => unescapeXml(res.text.match(new RegExp(`<${tag}>([^<]*)</${tag}>`))?.[1] ?? '')
  return { code: pick('Code') || `HTTP ${res.status}`, message: pick('Message') }
}

export function s3Fault(res: HttpResponse, where: string, nowMs: number, conditional?: 'if-match' | 'if-none-match'): DispatchFault | null {
  if (res.status >= 200 && res.status < 300) return null
  const err = s3Error(res)
  const said = err.message ? `${err.code}: ${err.message}` : err.code
  const context = { status: res.status, code: err.code }
  if (res.status === 412 || (res.status === 404 && conditional === 'if-match')) {
    const what = conditional === 'if-none-match' ? 'the object exists now, and the decision expected none' : 'the object is no longer the one the decision saw'
    return new DispatchFault('premise', `${where} answered ${res.status}: ${what} (${said})`, { context })
  }
  if (res.status === 409 && err.code === 'ConditionalRequestConflict') {
    return new DispatchFault('retry-later', `${where} answered 409: a concurrent write to the object is in progress (${said})`, { context })
  }
  return faultFromStatus({ status: res.status, body: { message: said }, retryAfter: res.headers['retry-after'] }, 2, where, nowMs)
}

function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|quot|apos|amp);/g, (_, e: string) => ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' })[e]!)
}
