/**
 * The GitHub target's actions and their arguments, validated at the edge.
 *
 *   merge   { pull_number, merge_method?: "merge" | "squash", commit_title?, message? }
 *   revert  { merge_sha, base, pull_number?, message? }   (the compensation of a merge)
 *
 * Both leave a commit on the base branch whose message ends in the trailer
 * `Interlock-Effect: <effect id>`: that line is how query finds the effect
 * again, so a caller's message may not carry one of its own.
 *
 * "rebase" is refused: GitHub ignores commit_message for it, so the rebased
 * commits could carry no trailer and the merge could not be found again.
 */
import type { JsonObject } from '../../canonical-json.js'
import { InputError } from '../../errors.js'

export const GITHUB_ACTIONS = ['merge', 'revert'] as const
export type GithubActionName = (typeof GITHUB_ACTIONS)[number]
export const MERGE_METHODS = ['merge', 'squash'] as const
export type MergeMethod = (typeof MERGE_METHODS)[number]

export const TRAILER_KEY = 'Interlock-Effect'

export type GithubAction =
  | { action: 'merge'; pullNumber: number; mergeMethod?: MergeMethod; commitTitle?: string; message?: string }
  | { action: 'revert'; mergeSha: string; base: string; pullNumber?: number; message?: string }

const ALLOWED: Record<GithubActionName, readonly string[]> = {
  merge: ['pull_number', 'merge_method', 'commit_title', 'message'],
  revert: ['merge_sha', 'base', 'pull_number', 'message'],
}

const SHA = /^[0-9a-f]{40}$/
// git check-ref-format, roughly: what GitHub accepts as a branch name.
const BRANCH = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)(?!.*\.lock$)(?!.*\/$)(?!\/)[^\s~^:?*[\\\x00-\x1f\x7f]{1,255}$/

export function parseGithubAction(action: string, args: JsonObject): GithubAction {
  if (!(GITHUB_ACTIONS as readonly string[]).includes(action)) {
    throw new InputError(`the github target has no action ${JSON.stringify(action)}; it knows ${GITHUB_ACTIONS.join(', ')}`)
  }
  const name = action as GithubActionName
  const unknown = Object.keys(args).filter((k) => !ALLOWED[name].includes(k))
  if (unknown.length > 0) throw new InputError(`${name}: unknown argument(s) ${unknown.join(', ')}; expected ${ALLOWED[name].join(', ')}`)
  const message = args.message === undefined ? undefined : text(name, 'message', args.message, 60_000)
  if (name === 'merge') {
    const out: GithubAction = { action: 'merge', pullNumber: pullNumber(name, args.pull_number) }
    if (args.merge_method !== undefined) {
      if (!(MERGE_METHODS as readonly unknown[]).includes(args.merge_method)) {
        throw new InputError(`merge: merge_method must be "merge" or "squash" (got ${JSON.stringify(args.merge_method)})`, {
          hint: 'A rebase merge drops the commit message, and with it the trailer Interlock finds the merge by.',
        })
      }
      out.mergeMethod = args.merge_method as MergeMethod
    }
    if (args.commit_title !== undefined) out.commitTitle = text(name, 'commit_title', args.commit_title, 1_000)
    if (message !== undefined) out.message = message
    return out
  }
  if (typeof args.merge_sha !== 'string' || !SHA.test(args.merge_sha)) {
    throw new InputError(`revert: merge_sha must be a full 40-character lower-case commit SHA (got ${JSON.stringify(args.merge_sha)})`)
  }
  const out: GithubAction = { action: 'revert', mergeSha: args.merge_sha, base: branch(name, args.base) }
  if (args.pull_number !== undefined) out.pullNumber = pullNumber(name, args.pull_number)
  if (message !== undefined) out.message = message
  return out
}

export function branch(action: string, v: unknown): string {
  if (typeof v !== 'string' || !BRANCH.test(v)) throw new InputError(`${action}: base must be a branch name (got ${JSON.stringify(v)})`)
  return v
}

function pullNumber(action: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) {
    throw new InputError(`${action}: pull_number must be a positive whole number (got ${JSON.stringify(v)})`)
  }
  return v
}

function text(action: string, field: string, v: unknown, max: number): string {
  if (typeof v !== 'string' || v.trim() === '' || v.length > max || v.includes('\0')) {
    throw new InputError(`${action}: ${field} must be non-empty text of at most ${max} characters`)
  }
  // The trailer is the effect's proof of having happened: a message may not forge one.
  if (v.toLowerCase().includes(TRAILER_KEY.toLowerCase())) throw new InputError(`${action}: ${field} may not contain "${TRAILER_KEY}"; Interlock adds it`)
  return v
}

/** `message` (if any) with the effect trailer as its own last paragraph, as git parses trailers. */
export function withTrailer(message: string | undefined, effectId: string): string {
  const trailer = `${TRAILER_KEY}: ${effectId}`
  return message === undefined ? trailer : `${message.trimEnd()}\n\n${trailer}`
}

export function carriesTrailer(message: unknown, effectId: string): boolean {
  return typeof message === 'string' && message.split(/\r?\n/).some((line) => line.trim() === `${TRAILER_KEY}: ${effectId}`)
}
