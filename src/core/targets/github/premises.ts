/**
 * GitHub premises: what the agent saw when it decided, flat in the effect's
 * premises.
 *
 *   merge:  { pull_number, head_sha, base_ref, state, merged, mergeable }
 *           (GET /repos/{o}/{r}/pulls/{n}; mergeable may be null while GitHub computes it)
 *   revert: { base_ref, base_head }   (GET /repos/{o}/{r}/git/ref/heads/{base})
 *
 * validatePremises reads the same resource again. `head_sha` is also pushed
 * down to GitHub as the merge's `sha`, so a push between this check and the
 * merge is refused by GitHub itself (409). A read that fails for any other
 * reason throws a TargetError: "cannot check now" is neither "holds" nor "changed".
 */
import type { JsonObject } from '../../canonical-json.js'
import type { Premises } from '../../effect.js'
import { TargetError } from '../../errors.js'
import { serviceMessage } from '../http/body.js'
import type { GithubAction } from './actions.js'
import type { GithubAnswer, GithubApi } from './api.js'

type Merge = Extract<GithubAction, { action: 'merge' }>
type Revert = Extract<GithubAction, { action: 'revert' }>

export interface PullView {
  number: number
  state: string
  merged: boolean
  mergeable: boolean | null
  headSha: string
  baseRef: string
  mergeCommitSha: string | null
}

/** The pull request, or null when GitHub says it does not exist. */
export async function readPull(api: GithubApi, n: number): Promise<PullView | null> {
  const answer = await api.getPull(n)
  if (answer.status === 404) return null
  const pr = ok(answer, api, 'GET', `pull request #${n}`)
  const head = obj(pr.head)
  const base = obj(pr.base)
  return {
    number: n,
    state: String(pr.state),
    merged: pr.merged === true,
    mergeable: typeof pr.mergeable === 'boolean' ? pr.mergeable : null,
    headSha: String(head.sha),
    baseRef: String(base.ref),
    mergeCommitSha: typeof pr.merge_commit_sha === 'string' ? pr.merge_commit_sha : null,
  }
}

/** The commit a branch points at, or null when there is no such branch. */
export async function readBranchHead(api: GithubApi, branch: string): Promise<string | null> {
  const answer = await api.getBranch(branch)
  if (answer.status === 404) return null
  return String(obj(ok(answer, api, 'GET', `branch ${branch}`).object).sha)
}

export async function captureMerge(api: GithubApi, a: Merge): Promise<Premises> {
  const pr = await readPull(api, a.pullNumber)
  if (!pr) throw new TargetError(`${api.where('GET')}: pull request #${a.pullNumber} does not exist`)
  return { pull_number: pr.number, head_sha: pr.headSha, base_ref: pr.baseRef, state: pr.state, merged: pr.merged, mergeable: pr.mergeable }
}

export async function validateMerge(api: GithubApi, a: Merge, p: Premises): Promise<string[]> {
  if (typeof p.head_sha !== 'string') {
    return ['premises.head_sha is missing: capture the pull request first, so the merge is bound to the head commit the decision saw']
  }
  const pr = await readPull(api, a.pullNumber)
  if (!pr) return [`pull request #${a.pullNumber} no longer exists`]
  const out: string[] = []
  if (pr.merged) out.push(`pull request #${pr.number} is already merged${pr.mergeCommitSha ? ` (as ${pr.mergeCommitSha})` : ''}`)
  else if (pr.state !== 'open') out.push(`pull request #${pr.number} is ${pr.state}`)
  if (pr.headSha !== p.head_sha) out.push(`the head of pull request #${pr.number} moved from ${p.head_sha} to ${pr.headSha}`)
  if (typeof p.base_ref === 'string' && pr.baseRef !== p.base_ref) out.push(`the base of pull request #${pr.number} changed from ${p.base_ref} to ${pr.baseRef}`)
  if (p.mergeable === true && pr.mergeable === false) out.push(`pull request #${pr.number} is no longer mergeable`)
  return out
}

export async function captureRevert(api: GithubApi, a: Revert): Promise<Premises> {
  const head = await readBranchHead(api, a.base)
  if (head === null) throw new TargetError(`${api.where('GET')}: branch ${a.base} does not exist`)
  return { base_ref: a.base, base_head: head }
}

/**
 * The revert writes the tree of the merge's first parent, so it is only right
 * while the merge is still the tip of the base branch: a later commit would be
 * undone with it.
 */
export async function validateRevert(api: GithubApi, a: Revert, p: Premises): Promise<string[]> {
  const expected = typeof p.base_head === 'string' ? p.base_head : a.mergeSha
  const out: string[] = []
  if (expected !== a.mergeSha) {
    out.push(`${a.base} had moved past ${a.mergeSha} when the revert was decided (it was at ${expected}); reverting to the merge's parent would undo those commits too`)
  }
  const head = await readBranchHead(api, a.base)
  if (head === null) return [...out, `branch ${a.base} no longer exists`]
  if (head !== expected) out.push(`branch ${a.base} moved from ${expected} to ${head} since the revert was decided`)
  return out
}

function ok(answer: GithubAnswer, api: GithubApi, method: string, what: string): JsonObject {
  if (answer.status < 200 || answer.status >= 300) {
    throw new TargetError(`${api.where(method)} answered ${answer.status} reading ${what}, so it cannot be checked now: ${serviceMessage(answer.body)}`, {
      context: { status: answer.status },
    })
  }
  return obj(answer.body)
}

export function obj(v: unknown): JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as JsonObject) : {}
}
