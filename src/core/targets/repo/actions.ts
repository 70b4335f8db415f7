/**
 * The repo target's actions and their arguments, validated at the edge.
 *
 *   write_file   { path, content, encoding?: "utf8" | "base64", message?, rests_on? }
 *   delete_file  { path, message?, rests_on? }
 *   apply_patch  { patch (unified diff, as `git diff` writes it), message?, rests_on? }
 *
 * `message` is the commit message (Interlock adds the effect trailer);
 * `rests_on` lists the premises `capture` reads (premises.ts), and defaults to
 * the files the action touches, at file precision.
 */
import type { JsonObject } from '../../canonical-json.js'
import { InputError } from '../../errors.js'
import { assertUtf8Text } from '../utf8-text.js'
import { normaliseRepoPath } from './paths.js'
import { parsePremiseSpec, type PremiseSpec } from './premises.js'

export const REPO_ACTIONS = ['write_file', 'delete_file', 'apply_patch'] as const
export type RepoActionName = (typeof REPO_ACTIONS)[number]

interface Common {
  message?: string
  restsOn?: PremiseSpec[]
}
export type RepoAction =
  | ({ action: 'write_file'; path: string; content: Buffer } & Common)
  | ({ action: 'delete_file'; path: string } & Common)
  | ({ action: 'apply_patch'; patch: string } & Common)

export const TRAILER_KEY = 'Interlock-Effect'

const ALLOWED: Record<RepoActionName, readonly string[]> = {
  write_file: ['path', 'content', 'encoding', 'message', 'rests_on'],
  delete_file: ['path', 'message', 'rests_on'],
  apply_patch: ['patch', 'message', 'rests_on'],
}

export function parseRepoAction(action: string, args: JsonObject): RepoAction {
  if (!(REPO_ACTIONS as readonly string[]).includes(action)) {
    throw new InputError(`the repo target has no action ${JSON.stringify(action)}; it knows ${REPO_ACTIONS.join(', ')}`)
  }
  const name = action as RepoActionName
  const unknown = Object.keys(args).filter((k) => !ALLOWED[name].includes(k))
  if (unknown.length > 0) throw new InputError(`${name}: unknown argument(s) ${unknown.join(', ')}; expected ${ALLOWED[name].join(', ')}`)
  const common = parseCommon(name, args)
  switch (name) {
    case 'write_file': {
      if (typeof args.content !== 'string') throw new InputError(`write_file: content must be a string`)
      const encoding = args.encoding ?? 'utf8'
      if (encoding !== 'utf8' && encoding !== 'base64') throw new InputError(`write_file: encoding must be "utf8" or "base64"`)
      if (encoding === 'utf8') assertUtf8Text(args.content, 'write_file: content', 'Send bytes that are not UTF-8 text with encoding = "base64".')
      return { action: name, path: normaliseRepoPath(args.path), content: Buffer.from(args.content, encoding), ...common }
    }
    case 'delete_file':
      return { action: name, path: normaliseRepoPath(args.path), ...common }
    case 'apply_patch':
      if (typeof args.patch !== 'string' || args.patch.trim() === '') throw new InputError(`apply_patch: patch must be a non-empty unified diff`)
      assertUtf8Text(args.patch, 'apply_patch: patch')
      return { action: name, patch: args.patch.endsWith('\n') ? args.patch : `${args.patch}\n`, ...common }
  }
}

function parseCommon(name: string, args: JsonObject): Common {
  const out: Common = {}
  if (args.message !== undefined) {
    const m = args.message
    if (typeof m !== 'string' || m.trim() === '' || m.length > 10_000 || m.includes('\0')) {
      throw new InputError(`${name}: message must be non-empty text of at most 10000 characters`)
    }
    // The trailer is the effect's proof of having happened: a message may not forge one.
    if (m.toLowerCase().includes(TRAILER_KEY.toLowerCase())) throw new InputError(`${name}: message may not contain "${TRAILER_KEY}"; Interlock adds it`)
    assertUtf8Text(m, `${name}: message`)
    out.message = m
  }
  if (args.rests_on !== undefined) {
    if (!Array.isArray(args.rests_on)) throw new InputError(`${name}: rests_on must be a list of premises ("path", "path#Symbol" or { file, symbol })`)
    out.restsOn = args.rests_on.map((s) => {
      parsePremiseSpec(s)
      return s as PremiseSpec
    })
  }
  return out
}

/** The commit message: the caller's (or a default), then the trailer as its own paragraph so `git interpret-trailers` finds it. */
export function commitMessage(a: RepoAction, effectId: string, paths: readonly string[]): string {
  const subject = a.message?.trimEnd() ?? (a.action === 'apply_patch' ? `interlock: apply_patch (${paths.length} file${paths.length === 1 ? '' : 's'})` : `interlock: ${a.action} ${a.path}`)
  return `${subject}\n\n${TRAILER_KEY}: ${effectId}\n`
}
