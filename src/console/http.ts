/**
 * Answers as the console sends them: every response carries headers that
 * keep the pages to themselves (no script, style or form target but the
 * console's own, no framing, no referrer, nothing cached), and every page is
 * scrubbed of the config's secrets on its way out, whatever a view forgot.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { redact } from '../core/config/redact.js'
import { InterlockError } from '../core/errors.js'
import type { Html } from './views/html.js'

/** A form is a few fields: anything larger is not one of ours. */
const MAX_FORM_BYTES = 16 * 1024

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // Not no-referrer: under it Chromium sends `Origin: null` with the console's own forms, which the Origin check must refuse.
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
}

export function sendPage(res: ServerResponse, status: number, page: Html, secrets: readonly string[], headers: Record<string, string> = {}): void {
  const body = redact(page.text, secrets)
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), ...headers })
  res.end(body)
}

export function redirect(res: ServerResponse, location: string, headers: Record<string, string> = {}): void {
  res.writeHead(303, { ...SECURITY_HEADERS, location, 'content-length': '0', ...headers })
  res.end()
}

export function sendAsset(res: ServerResponse, type: string, body: Buffer): void {
  res.writeHead(200, { ...SECURITY_HEADERS, 'cache-control': 'no-cache', 'content-type': type, 'content-length': String(body.length) })
  res.end(body)
}

/** The fields of an application/x-www-form-urlencoded body. */
export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/x-www-form-urlencoded') throw new FormError(415, 'the console takes its own forms only (application/x-www-form-urlencoded)')
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_FORM_BYTES) throw new FormError(413, `a form of more than ${MAX_FORM_BYTES} bytes`)
    chunks.push(chunk)
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'))
}

export class FormError extends InterlockError {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super('E_CONSOLE_FORM', 2, message)
  }
}
