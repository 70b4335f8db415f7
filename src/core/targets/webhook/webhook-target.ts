/**
 * A webhook, tier 1: `POST <url>` of the effect's args as canonical JSON,
 * with `Idempotency-Key: <effect id>` (a receiver keeps the keys it has seen
 * and answers a repeat without acting again) and the body signed with the
 * shared secret (signature.ts). Notices go out this way (notify/); any effect
 * may.
 *
 * The answer: 2xx done; 429, 409 (the key in flight) not now; other 4xx
 * refused; 5xx, reset, timeout unknown, sent again with the same key
 * (http/faults.ts).
 */
import { canonicalJson } from '../../canonical-json.js'
import type { Effect, Receipt } from '../../effect.js'
import { ConfigError } from '../../errors.js'
import { HttpClient, type HttpClientOptions } from '../http/client.js'
import { faultFromStatus } from '../http/faults.js'
import type { ApplyContext, EffectTarget } from '../target.js'
import { SIGNATURE_HEADER, signWebhook } from './signature.js'

export interface WebhookTargetSettings {
  url: string
  /** The shared secret the body is signed with, from `${VAR}`. */
  secret: string
  headers?: Record<string, string>
  timeoutMs?: number
  connectTimeoutMs?: number
}

export class WebhookTarget implements EffectTarget {
  readonly tier = 1 as const
  readonly notCompensable = 'a delivered webhook cannot be taken back; send another that says so'
  private readonly http: HttpClient

  constructor(
    readonly name: string,
    private readonly settings: WebhookTargetSettings,
    options: HttpClientOptions = {},
  ) {
    let ok = false
    try {
      ok = ['http:', 'https:'].includes(new URL(settings.url).protocol)
    } catch {}
    if (!ok) throw new ConfigError(`target ${name}: url must be an http or https URL`, [`targets.${name}.url: must be an http or https URL`])
    if (!settings.secret) throw new ConfigError(`target ${name}: secret is required`, [`targets.${name}.secret: required (the body is signed with it)`])
    // The secret never goes on the wire, but keep it out of every error and receipt all the same.
    this.http = new HttpClient(name, { headers: settings.headers ?? {}, timeoutMs: settings.timeoutMs ?? 10_000, connectTimeoutMs: settings.connectTimeoutMs ?? 3_000 }, { ...options, secrets: [...(options.secrets ?? []), settings.secret] })
  }

  async validatePremises(): Promise<string[]> {
    return []
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    const body = canonicalJson(effect.args)
    const headers = { 'content-type': 'application/json', 'idempotency-key': effect.id, [SIGNATURE_HEADER.toLowerCase()]: signWebhook(this.settings.secret, body, this.http.now()), ...(ctx.headers ?? {}) }
    const answer = await this.http.send('POST', this.settings.url, headers, body, ctx)
    const fault = faultFromStatus(answer, 1, this.http.where('POST', this.settings.url), this.http.now())
    if (fault) throw fault
    return { status: answer.status }
  }

  async close(): Promise<void> {
    await this.http.close()
  }
}
