/**
 * An HTTP service as an effect target, at the tier its config declares, per
 * action where `actions` says (actions.ts).
 *
 * apply sends the request the action's templates describe (request.ts): the
 * service's own method, URL, headers and body (JSON, form-encoded or
 * GraphQL), the effect id in the header the service reads (`Idempotency-Key`
 * by default at tier 1) or wherever a template puts {effect_id}. With no
 * template it sends Interlock's envelope {action, args, effect_id} as
 * canonical JSON, as it always has. The answer is judged by the declared
 * rules over the built-in reading (answers.ts). At tier 2, query asks the
 * declared query (query.ts: a GET of `queryUrl`, 2xx found and 404 not, or a
 * templated search and a JSON pointer). Premises are `restsOn` reads
 * (reads.ts) or the whole body of `premiseUrl` (http-premises.ts).
 *
 * Every call goes through the shared HttpClient (client.ts): a connect timeout
 * and a total timeout on each, and secrets kept out of errors and receipts.
 */
import type { JsonObject } from '../../canonical-json.js'
import type { HttpTargetConfig } from '../../config/types.js'
import type { Effect, Premises, Receipt, Tier } from '../../effect.js'
import { ConfigError, DispatchFault, InputError } from '../../errors.js'
import type { ApplyContext, EffectTarget, ProbeResult, QueryContext } from '../target.js'
import { assertUtf8Text } from '../utf8-text.js'
import { allSpecs, specFor, specsOf, type ActionSpec, type TargetSpecs } from './actions.js'
import { judgeAnswer } from './answers.js'
import { HttpClient, type HttpAnswer, type HttpClientOptions } from './client.js'
import type { RequestGuard } from './fence.js'
import { capturePremise, validatePremise } from './http-premises.js'
import { probeHttp } from './probe.js'
import { askFound, SendClock } from './query.js'
import { captureReads, readViolations } from './reads.js'
import { buildRequest, type BuiltRequest } from './request.js'
import { argPathOf, at, placeholdersOf, type TemplateVars } from './template.js'
import { httpTemplateProblems } from './templates.js'

export type HttpTargetSettings = Pick<HttpTargetConfig, 'tier' | 'url'> & Partial<Omit<HttpTargetConfig, 'type' | 'tier' | 'url' | 'notary' | 'notaryServices'>>

export type HttpTargetOptions = HttpClientOptions
export type { HttpAnswer }

type Settled = HttpTargetConfig & Required<Pick<HttpTargetConfig, 'method' | 'headers' | 'timeoutMs' | 'connectTimeoutMs'>>

/** Stands in for the effect id where none exists yet: a call's templates are filled in at submit to find what it lacks. */
const NO_ID_YET = '0'.repeat(64)

export class HttpTarget implements EffectTarget {
  readonly tier: Tier
  readonly query?: (effect: Effect, ctx?: QueryContext) => Promise<Receipt | null>
  private readonly config: Settled
  private readonly specs: TargetSpecs
  private readonly http: HttpClient
  /** When this process last sent each effect whose query lags (settle_ms). */
  private readonly clock = new SendClock()

  constructor(
    readonly name: string,
    settings: HttpTargetSettings,
    options: HttpTargetOptions = {},
  ) {
    this.config = { type: 'http', method: 'POST', headers: {}, timeoutMs: 10_000, connectTimeoutMs: 3_000, ...settings }
    this.tier = settings.tier
    checkSettings(name, this.config)
    this.specs = specsOf(name, this.config)
    // Every declared header value is a secret, wherever it is declared.
    const headerValues = allSpecs(this.specs).flatMap((s) => [s.request.headers, s.query?.headers ?? {}, ...(s.restsOn ?? []).map((r) => r.headers ?? {})]).flatMap(Object.values)
    this.http = new HttpClient(name, this.config, { ...options, secrets: [...(options.secrets ?? []), ...headerValues] })
    // Only a target that can answer "did it happen?" offers query: assertTarget relies on that.
    if (allSpecs(this.specs).some((s) => s.query)) this.query = (effect, ctx) => this.find(effect, ctx)
  }

  /** The tier an action is journaled with: its own under `actions`, else the target's. */
  tierOf(action: string): Tier {
    return this.specOf(action).tier
  }

  /**
   * Refused at submit, before anything is journaled: an action the target
   * does not take, an argument the action does not declare, one a template
   * needs and the call lacks (named), one that cannot go where a template
   * puts it (a list in a URL), or text without UTF-8 bytes in a URL.
   */
  validateArgs(action: string, args: JsonObject): void {
    const spec = this.specOf(action)
    const where = spec.action === null ? `target ${this.name}` : `target ${this.name}, action ${action}`
    if (spec.args) {
      const extra = Object.keys(args).filter((a) => !spec.args!.includes(a))
      if (extra.length > 0) {
        throw new InputError(`${where}: unknown argument${extra.length > 1 ? 's' : ''} ${extra.map((a) => `args.${a}`).join(', ')}; it takes ${spec.args.map((a) => `args.${a}`).join(', ') || 'none'}`, {
          hint: `Pass only the arguments declared in ${spec.keyPath}.args of interlock.toml, or declare the new one there and use it in a template.`,
        })
      }
    }
    const urlArgs = new Set([spec.request.url, spec.query?.url ?? '', ...(spec.restsOn ?? []).map((r) => r.url)].flatMap((u) => placeholdersOf(u)))
    for (const p of urlArgs) {
      const path = argPathOf(p)
      const v = path ? at(args, path) : undefined
      if (typeof v === 'string') assertUtf8Text(v, `${p} (in target ${this.name}'s URL)`)
    }
    const vars: TemplateVars = { effect_id: NO_ID_YET, action, args }
    try {
      buildRequest(spec.request, vars, spec.effectIdHeader)
      if (spec.query) buildRequest(spec.query, vars, undefined, false)
      for (const r of spec.restsOn ?? []) buildRequest({ method: 'GET', url: r.url, ...(r.params ? { params: r.params } : {}), headers: {} }, { action, args }, undefined, false)
    } catch (e) {
      if (e instanceof InputError) throw new InputError(`${where}: ${e.message}`, { hint: e.hint, cause: e })
      throw e
    }
  }

  async capture(action: string, args: JsonObject): Promise<Premises> {
    const spec = this.specOf(action)
    if (spec.restsOn) return captureReads(this.readSubject(), spec.restsOn, action, args)
    if (!this.config.premiseUrl) return {}
    return capturePremise(this, this.config.premiseUrl, action, args)
  }

  async validatePremises(effect: Effect): Promise<string[]> {
    const spec = specFor(this.specs, effect.action)
    return [...(await validatePremise(this, this.config.premiseUrl, effect)), ...(await readViolations(this.readSubject(), spec?.restsOn, effect))]
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    const spec = specFor(this.specs, effect.action)
    if (!spec) throw new DispatchFault('refused', `target ${this.name} no longer takes action ${effect.action} (not under actions in interlock.toml); nothing was sent`)
    let req: BuiltRequest
    try {
      req = buildRequest(spec.request, { effect_id: effect.id, action: effect.action, args: effect.args }, spec.effectIdHeader)
    } catch (e) {
      throw new DispatchFault('refused', `target ${this.name}: ${(e as Error).message}`, { cause: e })
    }
    // A tier-2 re-apply asks first, whoever forgot to: the query is what makes the tier safe.
    if (spec.query && spec.tier === 2 && (ctx.attempt > 1 || ctx.recovering)) {
      const found = await this.find(effect, { ...(ctx.dispatchedAt === undefined ? {} : { dispatchedAt: ctx.dispatchedAt }), ...(ctx.quietSince === undefined ? {} : { quietSince: ctx.quietSince }) })
      if (found) return found
    }
    let answer: HttpAnswer
    try {
      answer = await this.send(req.method, req.url, { ...ctx.headers, ...req.headers }, req.body, ctx)
    } catch (e) {
      const unsent = e instanceof DispatchFault && (e.kind === 'not-sent' || e.kind === 'fenced')
      // The service may have made it up to now: a lagging query's "not found" is measured from here.
      if (spec.query?.settleMs && !unsent) this.clock.noteSend(effect.id, this.http.now(), spec.query.settleMs)
      throw e
    }
    if (spec.query?.settleMs) this.clock.noteSend(effect.id, this.http.now(), spec.query.settleMs)
    return judgeAnswer(answer, spec.rules, spec.tier, this.where(req.method, req.url), this.http.now())
  }

  /** `interlock check`: GET query_url for an unknown effect, or HEAD the origin; read-only (probe.ts). */
  probe(signal?: AbortSignal): Promise<ProbeResult> {
    return probeHttp({ tier: this.tier, url: this.config.url, queryUrl: this.config.query ? undefined : this.config.queryUrl, send: (...a) => this.send(...a), where: (m, u) => this.where(m, u) }, signal)
  }

  async close(): Promise<void> {
    await this.http.close()
  }

  private async find(effect: Effect, ctx: QueryContext = {}): Promise<Receipt | null> {
    const spec = specFor(this.specs, effect.action)
    if (!spec?.query) {
      throw new DispatchFault('unknowable', `target ${this.name} has no query for action ${effect.action} (no longer declared in interlock.toml): whether it happened cannot be asked`)
    }
    const since = this.clock.since(effect.id, ctx.quietSince ?? ctx.dispatchedAt)
    return askFound({ send: (...a) => this.send(...a), where: (m, u) => this.where(m, u), now: () => this.http.now() }, spec.query, spec.tier, effect, since)
  }

  private specOf(action: string): ActionSpec {
    const spec = specFor(this.specs, action)
    if (spec) return spec
    const known = [...this.specs.actions.keys()]
    throw new InputError(`target ${this.name} takes the actions ${known.join(', ')}; not ${action}`, {
      hint: `Use one of them, or declare [targets.${this.name}.actions.${action}] in interlock.toml.`,
    })
  }

  private readSubject() {
    return {
      name: this.name,
      send: (m: string, u: string, h: Record<string, string>) => this.send(m, u, h),
      where: (m: string, u: string) => this.where(m, u),
      headersFor: (r: { headers?: Record<string, string> }) => ({ ...this.config.headers, ...(r.headers ?? {}) }),
    }
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

function checkSettings(name: string, c: Settled): void {
  const problems: string[] = []
  const key = `targets.${name}`
  if (![1, 2, 3].includes(c.tier)) problems.push(`${key}.tier: must be 1, 2 or 3`)
  const urls: [string, string | undefined][] = [['url', c.url], ['query_url', c.queryUrl], ['premise_url', c.premiseUrl]]
  for (const [field, value] of urls) {
    if (value === undefined) continue
    try {
      const u = new URL(value.replace(/\{[^}]*\}/g, 'x'))
      if (u.protocol !== 'http:' && u.protocol !== 'https:') problems.push(`${key}.${field}: must be an http or https URL`)
    } catch {
      problems.push(`${key}.${field}: not a URL`)
    }
  }
  if (c.tier === 2 && !c.queryUrl && !c.query && !c.actions) problems.push(`${key}.query_url: required at tier 2 (GET it: 2xx = the effect happened, 404 = it did not)`)
  if (c.premiseUrl && placeholdersOf(c.premiseUrl).includes('effect_id')) {
    problems.push(`${key}.premise_url: cannot use {effect_id}: premises are read before the effect exists`)
  }
  for (const [field, v] of [['timeout_ms', c.timeoutMs], ['connect_timeout_ms', c.connectTimeoutMs]] as const) {
    if (!Number.isInteger(v) || v <= 0) problems.push(`${key}.${field}: must be a positive whole number of milliseconds`)
  }
  // Settings here have their ${VAR}s filled in, and a secret may hold braces: misspelt placeholders are the loader's
  // to find, in the file's own text (loadedHttpTemplateProblems); everything else is checked again.
  problems.push(...httpTemplateProblems(name, c, { strays: false }))
  if (problems.length > 0) {
    throw new ConfigError(`target ${name} is misconfigured: ${problems.join('; ')}`, problems, {
      hint: 'Fix the [targets] section of interlock.toml.',
    })
  }
}

