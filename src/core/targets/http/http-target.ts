/**
 * An HTTP service as an effect target, at the tier its config declares.
 *
 * apply sends `{action, args, effect_id}` as canonical JSON (the same bytes on
 * every retry, which services that compare a retried key's body expect) to
 * `url`, with `Idempotency-Key: <effect id>` at tier 1. At tier 2, query GETs
 * `queryUrl`: 2xx means the effect happened (the body is the receipt), 404 that
 * it did not. Tier 3 has neither. With `premiseUrl`, capture stores what that
 * GET answers and validatePremises compares it again (http-premises.ts).
 *
 * Every call goes through the shared HttpClient (client.ts): a connect timeout
 * and a total timeout on each, and secrets kept out of errors and receipts.
 */
import { canonicalJson, type JsonObject } from '../../canonical-json.js'
import type { HttpTargetConfig } from '../../config/types.js'
import type { Effect, Premises, Receipt } from '../../effect.js'
import { ConfigError, DispatchFault } from '../../errors.js'
import type { ApplyContext, EffectTarget, ProbeResult } from '../target.js'
import { assertUtf8Text } from '../utf8-text.js'
import { HttpClient, type HttpAnswer, type HttpClientOptions } from './client.js'
import { faultFromStatus } from './faults.js'
import { capturePremise, validatePremise } from './http-premises.js'
import { probeHttp } from './probe.js'
import { expandUrl, placeholdersOf } from './template.js'
import type { RequestGuard } from './fence.js'

export type HttpTargetSettings = Pick<HttpTargetConfig, 'tier' | 'url'> & Partial<Omit<HttpTargetConfig, 'type' | 'tier' | 'url' | 'notary' | 'notaryServices'>>

export type HttpTargetOptions = HttpClientOptions
export type { HttpAnswer }

export class HttpTarget implements EffectTarget {
  readonly tier: HttpTargetConfig['tier']
  readonly query?: (effect: Effect) => Promise<Receipt | null>
  private readonly config: Required<Omit<HttpTargetSettings, 'queryUrl' | 'premiseUrl'>> & Pick<HttpTargetSettings, 'queryUrl' | 'premiseUrl'>
  private readonly http: HttpClient

  constructor(
    readonly name: string,
    settings: HttpTargetSettings,
    options: HttpTargetOptions = {},
  ) {
    this.config = { method: 'POST', headers: {}, timeoutMs: 10_000, connectTimeoutMs: 3_000, ...settings }
    this.tier = settings.tier
    checkSettings(name, this.config)
    this.http = new HttpClient(name, this.config, options)
    // Only a target that can answer "did it happen?" offers query: assertTarget relies on that.
    if (this.config.queryUrl) this.query = (effect) => this.find(effect)
  }

  /** An argument a URL names goes out percent-encoded as UTF-8: one without UTF-8 bytes is refused here, not at send. */
  validateArgs(_action: string, args: JsonObject): void {
    const named = new Set([this.config.url, this.config.queryUrl, this.config.premiseUrl].flatMap((u) => (u ? placeholdersOf(u) : [])))
    for (const p of named) {
      const v = p.startsWith('args.') ? args[p.slice('args.'.length)] : undefined
      if (typeof v === 'string') assertUtf8Text(v, `args.${p.slice('args.'.length)} (in target ${this.name}'s URL)`)
    }
  }

  async capture(action: string, args: JsonObject): Promise<Premises> {
    if (!this.config.premiseUrl) return {}
    return capturePremise(this, this.config.premiseUrl, action, args)
  }

  async validatePremises(effect: Effect): Promise<string[]> {
    return validatePremise(this, this.config.premiseUrl, effect)
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    let url: string
    try {
      url = expandUrl(this.config.url, { effect_id: effect.id, action: effect.action, args: effect.args })
    } catch (e) {
      throw new DispatchFault('refused', `target ${this.name}: ${(e as Error).message}`, { cause: e })
    }
    // A tier-2 re-apply asks first, whoever forgot to: the query is what makes the tier safe.
    if (this.query && this.tier === 2 && (ctx.attempt > 1 || ctx.recovering)) {
      const found = await this.query(effect)
      if (found) return found
    }
    const headers: Record<string, string> = { ...ctx.headers, 'content-type': 'application/json' }
    if (this.tier === 1) headers['idempotency-key'] = effect.id
    const body = canonicalJson({ action: effect.action, args: effect.args, effect_id: effect.id })
    const answer = await this.send(this.config.method, url, headers, body, ctx)
    const fault = faultFromStatus(answer, this.tier, this.where(this.config.method, url), this.http.now())
    if (fault) throw fault
    return { status: answer.status, body: answer.body }
  }

  /** `interlock check`: GET query_url for an unknown effect, or HEAD the origin; read-only (probe.ts). */
  probe(signal?: AbortSignal): Promise<ProbeResult> {
    return probeHttp({ tier: this.tier, url: this.config.url, queryUrl: this.config.queryUrl, send: (...a) => this.send(...a), where: (m, u) => this.where(m, u) }, signal)
  }

  async close(): Promise<void> {
    await this.http.close()
  }

  private async find(effect: Effect): Promise<Receipt | null> {
    const url = expandUrl(this.config.queryUrl!, { effect_id: effect.id, action: effect.action, args: effect.args })
    const answer = await this.send('GET', url, {})
    if (answer.status === 404) return null
    const fault = faultFromStatus(answer, this.tier, this.where('GET', url), this.http.now())
    if (fault) throw fault
    return { status: answer.status, body: answer.body }
  }

  /** One request with every timeout applied; network failures come back as DispatchFaults. */
  send(method: string, url: string, extra: Record<string, string>, body?: string, guard?: AbortSignal | RequestGuard): Promise<HttpAnswer> {
    return this.http.send(method, url, extra, body, guard)
  }

  /** How errors name a request: method and origin, never the path, query or headers. */
  where(method: string, url: string): string {
    return this.http.where(method, url)
  }
}

function checkSettings(name: string, c: HttpTarget['config']): void {
  const problems: string[] = []
  const key = `targets.${name}`
  if (![1, 2, 3].includes(c.tier)) problems.push(`${key}.tier: must be 1, 2 or 3`)
  for (const [field, value] of [['url', c.url], ['query_url', c.queryUrl], ['premise_url', c.premiseUrl]] as const) {
    if (value === undefined) continue
    try {
      const u = new URL(value.replace(/\{[^}]*\}/g, 'x'))
      if (u.protocol !== 'http:' && u.protocol !== 'https:') problems.push(`${key}.${field}: must be an http or https URL`)
    } catch {
      problems.push(`${key}.${field}: not a URL`)
    }
  }
  if (c.tier === 2 && !c.queryUrl) problems.push(`${key}.query_url: required at tier 2 (GET it: 2xx = the effect happened, 404 = it did not)`)
  if (c.premiseUrl && placeholdersOf(c.premiseUrl).includes('effect_id')) {
    problems.push(`${key}.premise_url: cannot use {effect_id}: premises are read before the effect exists`)
  }
  for (const [field, v] of [['timeout_ms', c.timeoutMs], ['connect_timeout_ms', c.connectTimeoutMs]] as const) {
    if (!Number.isInteger(v) || v <= 0) problems.push(`${key}.${field}: must be a positive whole number of milliseconds`)
  }
  if (problems.length > 0) {
    throw new ConfigError(`target ${name} is misconfigured: ${problems.join('; ')}`, problems, {
      hint: 'Fix the [targets] section of interlock.toml.',
    })
  }
}
