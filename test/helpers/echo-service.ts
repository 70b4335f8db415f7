/**
 * A web service that says back what it was sent, as real services do in
 * their answers and error pages: the channels through which a secret in a
 * target's URL or headers comes back to Interlock (plain node:http).
 *
 *   ANY /anything/...      200 with what the request carried, as httpbin's
 *                          /anything does (https://httpbin.org/#/Anything):
 *                          {method, url, args, headers: {authorization}}. Only
 *                          stable fields, so two reads of it are identical.
 *   ANY /fail/<status>/... that status, with a JSON error quoting the request
 *                          line as received: {"message":"<status> for POST /fail/...?..."}
 *                          (GitHub-style `message`).
 *   anything else          404 as Express answers an unmatched route: an HTML
 *                          page "Cannot <METHOD> <url>", the URL percent-encoded
 *                          and HTML-escaped (expressjs/finalhandler, `getErrorMessage`
 *                          and `createHtmlDocument`: https://github.com/pillarjs/finalhandler).
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export interface EchoService {
  readonly url: string
  /** Requests received: method and the URL as it arrived (percent-encoded). */
  requests(): { method: string; url: string }[]
  close(): Promise<void>
}

export async function startEchoService(): Promise<EchoService> {
  const log: { method: string; url: string }[] = []
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const method = req.method ?? 'GET'
      const raw = req.url ?? '/'
      log.push({ method, url: raw })
      const parsed = new URL(raw, 'http://echo')
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(body))
      }
      if (parsed.pathname.startsWith('/anything')) {
        const authorization = req.headers.authorization
        return json(200, {
          method,
          url: `http://${req.headers.host}${raw}`,
          args: Object.fromEntries(parsed.searchParams),
          headers: authorization === undefined ? {} : { authorization },
        })
      }
      const fail = /^\/fail\/(\d{3})\//.exec(parsed.pathname)
      if (fail) return json(Number(fail[1]), { message: `${fail[1]} for ${method} ${raw}` })
      res.writeHead(404, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': "default-src 'none'" })
      res.end(`<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Error</title>\n</head>\n<body>\n<pre>Cannot ${method} ${escapeHtml(encodeUrl(raw))}</pre>\n</body>\n</html>\n`)
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => structuredClone(log),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** pillarjs/encodeurl: percent-encode what is not allowed in a URL, leaving existing %XX as they are. */
function encodeUrl(url: string): string {
  return url
    .replace(/(^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]|[\uD800-\uDBFF]([^\uDC00-\uDFFF]|$)/g, '$1\uFFFD$2')
    .replace(/(?:[^\x21\x23-\x3B\x3D\x3F-\x5F\x61-\x7A\x7C\x7E]|%(?![0-9A-Fa-f]{2}))+/g, encodeURI)
}

/** component/escape-html, as finalhandler uses it. */
function escapeHtml(text: string): string {
  return text.replace(/["'&<>]/g, (c) => ({ '"': '&quot;', "'": '&#39;', '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!)
}
