/**
 * The revert effect, a merge's compensation, through the Git Data API so it
 * is one commit carrying its own trailer (and so tier 2 like the merge):
 *
 *   1. read the merge commit, then its first parent's tree (the base before the merge);
 *   2. create a commit with that tree, parent = the merge commit, message with the trailer;
 *   3. move the base branch to it without force.
 *
 * Step 3 is the premise pushed down: GitHub only fast-forwards, so if anyone
 * pushed to the base after the merge the update is refused (422) instead of
 * silently undoing their work. A crash between 2 and 3 leaves a commit no
 * branch points at; the re-apply makes another, and only one lands.
 *
 * https://docs.github.com/en/rest/git/commits#get-a-commit-object
 * https://docs.github.com/en/rest/git/commits#create-a-commit
 * https://docs.github.com/en/rest/git/refs#update-a-reference
 */
import type { Effect, Receipt } from '../../effect.js'
import { DispatchFault } from '../../errors.js'
import type { ApplyContext } from '../target.js'
import { withTrailer, type GithubAction } from './actions.js'
import type { GithubAnswer, GithubApi } from './api.js'
import { githubFault, type GithubCall } from './faults.js'
import { findOnBranch } from './merge.js'
import { obj } from './premises.js'

type Revert = Extract<GithubAction, { action: 'revert' }>

export async function applyRevert(api: GithubApi, effect: Effect, a: Revert, ctx: ApplyContext, nowMs: number): Promise<Receipt> {
  const check = (answer: GithubAnswer, call: GithubCall, method: string): void => {
    const fault = githubFault(answer, call, api.where(method), nowMs)
    if (fault) throw fault
  }
  const merge = await api.getCommit(a.mergeSha)
  if (merge.status === 404) throw new DispatchFault('refused', `${api.where('GET')}: commit ${a.mergeSha} does not exist; nothing to revert`)
  check(merge, 'read', 'GET')
  const parent = obj(Array.isArray(obj(merge.body).parents) ? (obj(merge.body).parents as unknown[])[0] : undefined).sha
  if (typeof parent !== 'string') throw new DispatchFault('refused', `${api.where('GET')}: commit ${a.mergeSha} has no parent; nothing to revert to`)
  const before = await api.getCommit(parent)
  check(before, 'read', 'GET')
  const tree = obj(obj(before.body).tree).sha
  if (typeof tree !== 'string') throw new DispatchFault('unknown', `${api.where('GET')}: commit ${parent} came back without its tree`)

  const subject = String(obj(merge.body).message ?? '').split('\n')[0]
  const message = withTrailer(a.message ?? `Revert "${subject}"\n\nThis reverts commit ${a.mergeSha}.`, effect.id)
  const created = await api.createCommit({ message, tree, parents: [a.mergeSha] }, ctx)
  check(created, 'create-commit', 'POST')
  const sha = obj(created.body).sha
  if (typeof sha !== 'string') throw new DispatchFault('refused', `${api.where('POST')}: the revert commit came back without a sha; the branch was not moved`)

  check(await api.updateBranch(a.base, sha, ctx), 'update-ref', 'PATCH')
  return { sha, reverted: a.mergeSha, branch: a.base }
}

export async function findRevert(api: GithubApi, effect: Effect, a: Revert): Promise<Receipt | null> {
  const sha = await findOnBranch(api, a.base, effect.id)
  return sha === null ? null : { sha, reverted: a.mergeSha, branch: a.base }
}
