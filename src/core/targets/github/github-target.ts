/**
 * A GitHub repository's pull requests as a tier-2 effect target.
 *
 * Actions (actions.ts): `merge` a pull request, and `revert` a merge (its
 * compensation). Each leaves one commit on the base branch carrying the
 * trailer `Interlock-Effect: <effect id>`, which is how query finds it after
 * a crash. The premise the merge rests on, the head commit, is pushed down as
 * the merge's `sha`; the revert's, the base branch tip, as a fast-forward-only
 * ref update. See merge.ts and revert.ts.
 *
 * The token goes only into the Authorization header and is scrubbed from
 * anything GitHub answers before it reaches an error or a receipt.
 */
import type { JsonObject } from '../../canonical-json.js'
import type { Effect, Premises, Receipt } from '../../effect.js'
import { ConfigError, DispatchFault, InputError, isInterlockError } from '../../errors.js'
import type { HttpClientOptions } from '../http/client.js'
import type { ApplyContext, Compensation, EffectTarget, ProbeResult } from '../target.js'
import { MERGE_METHODS, parseGithubAction, type GithubAction, type MergeMethod } from './actions.js'
import { GithubApi } from './api.js'
import { applyMerge, findMerge } from './merge.js'
import { captureMerge, captureRevert, readPull, validateMerge, validateRevert } from './premises.js'
import { applyRevert, findRevert } from './revert.js'
import { probeGithub } from './probe.js'

export interface GithubTargetSettings {
  /** A token allowed to merge pull requests and write contents (fine-grained: "Pull requests" and "Contents": write). */
  token: string
  owner: string
  repo: string
  /** Default https://api.github.com; https://<host>/api/v3 for GitHub Enterprise Server. */
  baseUrl?: string
  /** Default "merge". */
  mergeMethod?: MergeMethod
  /** Total time for one request (default 10000). */
  timeoutMs?: number
  /** Time to connect (default 3000). */
  connectTimeoutMs?: number
}

export type GithubTargetOptions = HttpClientOptions

const NAME = /^[A-Za-z0-9_.-]{1,100}$/

export class GithubTarget implements EffectTarget {
  readonly tier = 2 as const
  private readonly api: GithubApi
  private readonly mergeMethod: MergeMethod
  private readonly now: () => number

  constructor(
    readonly name: string,
    settings: GithubTargetSettings,
    options: GithubTargetOptions = {},
  ) {
    const s = { baseUrl: 'https://api.github.com', mergeMethod: 'merge' as MergeMethod, timeoutMs: 10_000, connectTimeoutMs: 3_000, ...settings }
    checkSettings(name, s)
    this.mergeMethod = s.mergeMethod
    this.now = options.now ?? Date.now
    this.api = new GithubApi(name, s, options)
    this.repository = { owner: s.owner, repo: s.repo }
  }

  private readonly repository: { owner: string; repo: string }

  /** `interlock check`: GET /user and GET /repos/{owner}/{repo}, read-only (probe.ts). */
  probe(signal?: AbortSignal): Promise<ProbeResult> {
    return probeGithub(this.api, this.repository.owner, this.repository.repo, signal)
  }

  validateArgs(action: string, args: JsonObject): void {
    parseGithubAction(action, args)
  }

  async capture(action: string, args: JsonObject): Promise<Premises> {
    const a = parseGithubAction(action, args)
    return a.action === 'merge' ? captureMerge(this.api, a) : captureRevert(this.api, a)
  }

  async validatePremises(effect: Effect): Promise<string[]> {
    const a = this.parsed(effect)
    // Bad arguments are not a changed world: apply refuses them by name, before anything is sent.
    if (!a) return []
    return a.action === 'merge' ? validateMerge(this.api, a, effect.premises) : validateRevert(this.api, a, effect.premises)
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    let a: GithubAction
    try {
      a = parseGithubAction(effect.action, effect.args)
    } catch (e) {
      throw new DispatchFault('refused', `target ${this.name}: ${(e as Error).message}; nothing was sent`, { cause: e })
    }
    return a.action === 'merge'
      ? applyMerge(this.api, effect, a, this.mergeMethod, ctx, this.now())
      : applyRevert(this.api, effect, a, ctx, this.now())
  }

  async query(effect: Effect): Promise<Receipt | null> {
    const a = parseGithubAction(effect.action, effect.args)
    return a.action === 'merge' ? findMerge(this.api, effect, a) : findRevert(this.api, effect, a)
  }

  /**
   * A merge is undone by a revert commit on its base branch, premised on the
   * merge still being the branch tip; a revert, by reverting the revert.
   */
  async compensation(effect: Effect, receipt: Receipt): Promise<Compensation> {
    const a = parseGithubAction(effect.action, effect.args)
    const sha = receipt.sha
    if (typeof sha !== 'string') throw new InputError(`target ${this.name}: the receipt of effect ${effect.id} names no commit to revert`)
    let base: string
    if (a.action === 'revert') base = a.base
    else if (typeof effect.premises.base_ref === 'string') base = effect.premises.base_ref
    else {
      const pr = await readPull(this.api, a.pullNumber)
      if (!pr) throw new InputError(`target ${this.name}: pull request #${a.pullNumber} no longer exists; cannot tell which branch to revert on`)
      base = pr.baseRef
    }
    const args: JsonObject = { merge_sha: sha, base }
    if (a.pullNumber !== undefined) args.pull_number = a.pullNumber
    return { action: 'revert', args, premises: { base_ref: base, base_head: sha } }
  }

  async close(): Promise<void> {
    await this.api.close()
  }

  private parsed(effect: Effect): GithubAction | null {
    try {
      return parseGithubAction(effect.action, effect.args)
    } catch (e) {
      if (isInterlockError(e)) return null
      throw e
    }
  }
}

function checkSettings(name: string, s: Required<GithubTargetSettings>): void {
  const problems: string[] = []
  const key = `targets.${name}`
  if (typeof s.token !== 'string' || s.token.trim() === '') problems.push(`${key}.token: must be a non-empty token, e.g. "\${GITHUB_TOKEN}"`)
  if (!NAME.test(s.owner ?? '')) problems.push(`${key}.owner: must be a GitHub account name`)
  if (!NAME.test(s.repo ?? '')) problems.push(`${key}.repo: must be a repository name`)
  try {
    const u = new URL(s.baseUrl)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') problems.push(`${key}.base_url: must be an http or https URL`)
  } catch {
    problems.push(`${key}.base_url: not a URL`)
  }
  if (!(MERGE_METHODS as readonly string[]).includes(s.mergeMethod)) problems.push(`${key}.merge_method: must be "merge" or "squash"`)
  for (const [field, v] of [['timeout_ms', s.timeoutMs], ['connect_timeout_ms', s.connectTimeoutMs]] as const) {
    if (!Number.isInteger(v) || v <= 0) problems.push(`${key}.${field}: must be a positive whole number of milliseconds`)
  }
  if (problems.length > 0) {
    throw new ConfigError(`target ${name} is misconfigured: ${problems.join('; ')}`, problems, { hint: 'Fix the [targets] section of interlock.toml.' })
  }
}
