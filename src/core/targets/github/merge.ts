/**
 * The merge effect: `PUT /repos/{o}/{r}/pulls/{n}/merge` with `sha` = the
 * premised head (GitHub refuses with 409 if the head moved: the premise pushed
 * down) and a commit message ending in the effect trailer.
 *
 * Finding it again (tier 2): the newest 100 commits of the base branch
 * (`GET /repos/{o}/{r}/commits?sha=<base>&per_page=100`, newest first) are
 * searched for the trailer; if more than that landed since, the pull
 * request's own merge commit is checked for it too.
 *
 * https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request
 * https://docs.github.com/en/rest/commits/commits#list-commits
 */
import type { JsonObject } from '../../canonical-json.js'
import type { Effect, Receipt } from '../../effect.js'
import { DispatchFault, TargetError } from '../../errors.js'
import { serviceMessage } from '../http/body.js'
import type { ApplyContext } from '../target.js'
import { carriesTrailer, withTrailer, type GithubAction, type MergeMethod } from './actions.js'
import type { GithubApi } from './api.js'
import { githubFault } from './faults.js'
import { obj, readPull, type PullView } from './premises.js'

type Merge = Extract<GithubAction, { action: 'merge' }>

export async function applyMerge(
  api: GithubApi,
  effect: Effect,
  a: Merge,
  defaultMethod: MergeMethod,
  ctx: ApplyContext,
  nowMs: number,
): Promise<Receipt> {
  const where = api.where('PUT')
  const head = effect.premises.head_sha
  if (typeof head !== 'string') {
    throw new DispatchFault('refused', `${where}: premises.head_sha is missing, so the merge cannot be bound to a head commit; nothing was sent`)
  }
  const body: JsonObject = { sha: head, merge_method: a.mergeMethod ?? defaultMethod, commit_message: withTrailer(a.message, effect.id) }
  if (a.commitTitle !== undefined) body.commit_title = a.commitTitle
  const answer = await api.mergePull(a.pullNumber, body, ctx)
  const fault = githubFault(answer, 'merge', where, nowMs)
  if (fault) throw fault
  const sha = obj(answer.body).sha
  if (typeof sha !== 'string') {
    throw new DispatchFault('unknown', `${where} answered ${answer.status} without the merge commit: ${serviceMessage(answer.body)}`)
  }
  return { sha, pull_number: a.pullNumber }
}

export async function findMerge(api: GithubApi, effect: Effect, a: Merge): Promise<Receipt | null> {
  let pr: PullView | null | undefined
  let base = effect.premises.base_ref
  if (typeof base !== 'string') {
    pr = await readPull(api, a.pullNumber)
    if (!pr) return null
    base = pr.baseRef
  }
  const found = await findOnBranch(api, base, effect.id)
  if (found) return { sha: found, pull_number: a.pullNumber }
  pr ??= await readPull(api, a.pullNumber)
  if (pr?.merged && pr.mergeCommitSha) {
    const commit = await api.getCommit(pr.mergeCommitSha)
    if (commit.status === 200 && carriesTrailer(obj(commit.body).message, effect.id)) return { sha: pr.mergeCommitSha, pull_number: a.pullNumber }
  }
  return null
}

/** The sha of the newest commit on `branch` (of the last 100) whose message carries the effect trailer. */
export async function findOnBranch(api: GithubApi, branch: string, effectId: string): Promise<string | null> {
  const answer = await api.listCommits(branch)
  // 404: no such branch; 409: an empty repository. Neither holds the effect.
  if (answer.status === 404 || answer.status === 409) return null
  if (answer.status !== 200 || !Array.isArray(answer.body)) {
    throw new TargetError(`${api.where('GET')} answered ${answer.status} listing the commits of ${branch}; cannot tell whether the effect happened: ${serviceMessage(answer.body)}`, {
      context: { status: answer.status },
    })
  }
  for (const c of answer.body) {
    const commit = obj(c)
    if (carriesTrailer(obj(commit.commit).message, effectId) && typeof commit.sha === 'string') return commit.sha
  }
  return null
}
