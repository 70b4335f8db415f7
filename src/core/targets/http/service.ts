/**
 * The common set-up of a target bound to one vendor's API (Stripe, SendGrid,
 * Slack): a base URL that tests point at an emulator, a Bearer credential, and
 * the shared HttpClient with its timeouts. The credential is handed to the
 * client as a header, so it is scrubbed from every body and never named in an
 * error (client.ts).
 */
import { ConfigError } from '../../errors.js'
import { HttpClient, type HttpClientOptions } from './client.js'

export interface ServiceSettings {
  /** The API's origin, and path prefix if any; a trailing slash is dropped. */
  baseUrl: string
  /** Total time for one request, headers and body (default 10000). */
  timeoutMs?: number
  /** Time to establish the connection (default 3000). */
  connectTimeoutMs?: number
}

export interface ServiceClient {
  http: HttpClient
  /** `path` (starting with "/") under the base URL. */
  url(path: string): string
}

/**
 * Checks the settings (a ConfigError naming each key that is wrong) and builds
 * the client. `credentialKey` is the TOML key the credential came from.
 */
export function bearerService(
  name: string,
  credentialKey: string,
  credential: string,
  settings: ServiceSettings,
  options: HttpClientOptions = {},
): ServiceClient {
  const key = `targets.${name}`
  const problems: string[] = []
  if (typeof credential !== 'string' || credential.trim() === '') problems.push(`${key}.${credentialKey}: required`)
  let base = ''
  try {
    const u = new URL(settings.baseUrl)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') problems.push(`${key}.base_url: must be an http or https URL`)
    base = `${u.origin}${u.pathname.replace(/\/+$/, '')}`
  } catch {
    problems.push(`${key}.base_url: not a URL`)
  }
  const timeoutMs = settings.timeoutMs ?? 10_000
  const connectTimeoutMs = settings.connectTimeoutMs ?? 3_000
  for (const [field, v] of [['timeout_ms', timeoutMs], ['connect_timeout_ms', connectTimeoutMs]] as const) {
    if (!Number.isInteger(v) || v <= 0) problems.push(`${key}.${field}: must be a positive whole number of milliseconds`)
  }
  if (problems.length > 0) {
    throw new ConfigError(`target ${name} is misconfigured: ${problems.join('; ')}`, problems, {
      hint: 'Fix the [targets] section of interlock.toml.',
    })
  }
  const http = new HttpClient(name, { timeoutMs, connectTimeoutMs, headers: { authorization: `Bearer ${credential}` } }, options)
  return { http, url: (path) => `${base}${path}` }
}
