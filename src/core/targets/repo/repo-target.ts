/**
 * A local git working repository as a tier-2 effect target.
 *
 * apply: change the working tree on the configured branch (which must be
 * checked out), stage exactly the touched paths and commit only them, with the
 * message ending in the trailer `Interlock-Effect: <effect id>`. A person's
 * other staged or unstaged work is not committed.
 * query: look for that trailer in the branch's history.
 *
 * Within apply, under the repository's in-process lock, the premises are
 * checked once more (a premise pushed down to the target, docs/design.md) so that a
 * second effect on the same repository cannot slip in between the gate's
 * check and this commit. Recovery's re-apply skips that check, as the gate
 * does: the world it would see may contain this very effect's half-made edit.
 */
import { realpath } from 'node:fs/promises'
import type { JsonObject } from '../../canonical-json.js'
import type { Effect, Premises, Receipt } from '../../effect.js'
import { DispatchFault, InputError, isInterlockError, TargetError } from '../../errors.js'
import type { ApplyContext, EffectTarget, ProbeResult } from '../target.js'
import { commitMessage, parseRepoAction, TRAILER_KEY, type RepoAction } from './actions.js'
import { prepareChange, type PreparedChange } from './changes.js'
import { firstLine, Git, GitCommandError, parseAuthor, type GitOptions } from './git.js'
import { clearStaleLock, lockPathFromGitError, type StaleLockPolicy } from './locks.js'
import { withKeyedLock } from './mutex.js'
import { captureRepoPremises, validateRepoPremises, type PremiseSpec } from './premises.js'
import { passFence } from '../fence.js'

export interface RepoTargetSettings {
  /** Absolute path of the top of the working tree. */
  path: string
  /** Default "main". */
  branch?: string
  /** "Name <email>"; default "Interlock <interlock@localhost>". */
  author?: string
}

export interface RepoTargetOptions extends GitOptions {
  staleLock?: StaleLockPolicy
}

interface Ready {
  root: string
  gitDirs: string[]
}

const BRANCH = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)(?!.*\.lock$)(?!.*\/$)[^\s~^:?*[\\\x00-\x1f\x7f]+$/

export class RepoTarget implements EffectTarget {
  readonly tier = 2 as const
  readonly branch: string
  private readonly git: Git
  private ready?: Promise<Ready>

  constructor(
    readonly name: string,
    settings: RepoTargetSettings,
    private readonly options: RepoTargetOptions = {},
  ) {
    this.branch = settings.branch ?? 'main'
    if (!BRANCH.test(this.branch)) throw new InputError(`target ${name}: ${JSON.stringify(this.branch)} is not a valid branch name`)
    const identity = parseAuthor(settings.author ?? 'Interlock <interlock@localhost>')
    this.git = new Git(settings.path, identity, options)
  }

  private get ref(): string {
    return `refs/heads/${this.branch}`
  }

  validateArgs(action: string, args: JsonObject): void {
    parseRepoAction(action, args)
  }

  async capture(action: string, args: JsonObject): Promise<Premises> {
    const parsed = parseRepoAction(action, args)
    const { root } = await this.open()
    return captureRepoPremises(root, parsed.restsOn ?? (await this.touchedPaths(root, parsed)))
  }

  async validatePremises(effect: Effect): Promise<string[]> {
    const { root } = await this.open()
    return validateRepoPremises(root, effect.premises)
  }

  async query(effect: Effect): Promise<Receipt | null> {
    await this.open()
    return this.findCommit(effect.id)
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    let action: RepoAction
    let repo: Ready
    try {
      action = parseRepoAction(effect.action, effect.args)
      repo = await this.open()
    } catch (e) {
      throw asFault(e)
    }
    return withKeyedLock(repo.root, () => this.applyLocked(repo, effect, action, ctx).catch((e) => Promise.reject(asFault(e))))
  }

  private async applyLocked(repo: Ready, effect: Effect, action: RepoAction, ctx: ApplyContext): Promise<Receipt> {
    if (ctx.attempt > 1 || ctx.recovering) {
      const found = await this.findCommit(effect.id)
      if (found) return found
    }
    await this.assertOnBranch(repo.root)
    if (!ctx.recovering) {
      const violations = await validateRepoPremises(repo.root, effect.premises)
      if (violations.length > 0) throw new DispatchFault('premise', violations.join('; '), { context: { violations } })
    }
    for (let tries = 0; ; tries++) {
      try {
        return await this.commitOnce(repo, effect, action, ctx)
      } catch (e) {
        const lock = e instanceof GitCommandError ? lockPathFromGitError(e.stderr) : null
        if (!lock) throw e
        // One retry after removing a stale lock; a live one means another git is at work.
        if (tries === 0 && (await clearStaleLock(lock, repo.root, repo.gitDirs, this.options.staleLock))) continue
        throw new DispatchFault('retry-later', `target ${this.name}: ${lock} is held by another git; the effect was not applied`, {
          cause: e,
          retryAfterMs: 1000,
          hint: 'If no git is running on this repository, the lock is left from a killed one and is removed once stale.',
        })
      }
    }
  }

  /** One attempt: change, stage, commit; on failure, undo unless the commit landed. */
  private async commitOnce(repo: Ready, effect: Effect, action: RepoAction, ctx: ApplyContext): Promise<Receipt> {
    const before = await this.branchHead()
    const change = await prepareChange(this.git, repo.root, action)
    try {
      await change.write()
      await this.git.run(['add', '--all', '--', ...change.paths])
      const message = commitMessage(action, effect.id, change.paths)
      // The commit is the write; a relay that lost its lease in the steps above undoes them instead.
      passFence(ctx.fence, `target ${this.name}: git commit on ${this.branch}`)
      await this.git.run(['commit', '--quiet', '--no-verify', '--allow-empty', '--cleanup=whitespace', '-m', message, '--', ...change.paths])
    } catch (e) {
      const after = await this.branchHead().catch(() => before)
      if (after !== before && after !== null && (await this.trailerValues(after)).includes(effect.id)) {
        return { commit: after, branch: this.branch }
      }
      await this.undo(change, before)
      throw e
    } finally {
      await change.dispose()
    }
    // Another process may commit on the branch right after us: name our commit by its trailer.
    const head = await this.branchHead()
    if (head && (await this.trailerValues(head)).includes(effect.id)) return { commit: head, branch: this.branch }
    const found = await this.findCommit(effect.id)
    if (!found) throw new DispatchFault('unknown', `target ${this.name}: git committed, but the commit carrying effect ${effect.id} is not on branch ${this.branch}`)
    return found
  }

  /** Best effort: the original failure is what the caller needs to see. */
  private async undo(change: PreparedChange, head: string | null): Promise<void> {
    await change.restore().catch(() => {})
    const unstage = head === null ? ['rm', '--quiet', '--cached', '--ignore-unmatch', '--'] : ['reset', '--quiet', '--']
    await this.git.run([...unstage, ...change.paths]).catch(() => {})
  }

  private async findCommit(effectId: string): Promise<Receipt | null> {
    if ((await this.branchHead()) === null) return null
    const out = await this.git.run([
      'log',
      '--fixed-strings',
      `--grep=${effectId}`,
      `--format=%H%x00%(trailers:key=${TRAILER_KEY},valueonly,separator=%x1f)%x1e`,
      this.ref,
      '--',
    ])
    for (const record of out.split('\x1e')) {
      const [hash, values = ''] = record.trim().split('\0')
      if (hash && values.split('\x1f').some((v) => v.trim() === effectId)) return { commit: hash, branch: this.branch }
    }
    return null
  }

  private async trailerValues(commit: string): Promise<string[]> {
    const out = await this.git.run(['log', '-1', `--format=%(trailers:key=${TRAILER_KEY},valueonly,separator=%x1f)`, commit, '--'])
    return out.split('\x1f').map((v) => v.trim())
  }

  private async branchHead(): Promise<string | null> {
    const out = await this.git.tryRun(['rev-parse', '--verify', '--quiet', `${this.ref}^{commit}`])
    return out === null ? null : out.trim()
  }

  private async assertOnBranch(root: string): Promise<void> {
    const head = (await this.git.tryRun(['symbolic-ref', '--quiet', 'HEAD']))?.trim() ?? null
    if (head !== this.ref) {
      throw new DispatchFault(
        'refused',
        `target ${this.name}: the working tree at ${root} has ${head ? head.replace('refs/heads/', 'branch ') : 'a detached HEAD'} checked out, not branch ${this.branch}`,
        { hint: `Run: git -C ${root} switch ${this.branch}` },
      )
    }
  }

  private async touchedPaths(root: string, action: RepoAction): Promise<PremiseSpec[]> {
    if (action.action !== 'apply_patch') return [action.path]
    const change = await prepareChange(this.git, root, action)
    await change.dispose()
    return change.paths
  }

  /** Resolves the repository once: its real top-level path and git directories (for lock checks). */
  /**
   * `interlock check`: the folder is the top of a git working tree and the
   * branch exists. Read-only: rev-parse only (no fetch, no lock taken).
   */
  async probe(): Promise<ProbeResult> {
    try {
      const { root } = await this.open()
      const head = await this.git.tryRun(['rev-parse', '--verify', '--quiet', `${this.ref}^{commit}`])
      if (!head) {
        return { ok: false, detail: `target ${this.name}: ${root} has no branch ${this.branch}`, fix: `Create it (git -C ${root} branch ${this.branch}) or fix branch in the target config.` }
      }
      return { ok: true, detail: `${root}: branch ${this.branch} at ${head.trim().slice(0, 12)}` }
    } catch (e) {
      if (e instanceof TargetError) return { ok: false, detail: e.message, fix: e.hint ?? 'Fix path in the target config.' }
      throw e
    }
  }

  private open(): Promise<Ready> {
    this.ready ??= (async () => {
      const root = await realpath(this.git.cwd).catch(() => {
        throw new TargetError(`target ${this.name}: ${this.git.cwd} does not exist`)
      })
      const out = await this.git.tryRun(['rev-parse', '--show-toplevel', '--absolute-git-dir', '--git-common-dir'])
      const [top, gitDir, common] = (out ?? '').split('\n')
      if (!top || (await realpath(top)) !== root) {
        throw new TargetError(`target ${this.name}: ${root} is not the top of a git working tree`, {
          hint: `Point the target at a repository's top folder, or create one: git init -b ${this.branch} ${root}`,
        })
      }
      const gitDirs = await Promise.all([gitDir!, common!].map((d) => realpath(d.startsWith('/') ? d : `${root}/${d}`)))
      return { root, gitDirs: [...new Set(gitDirs)] }
    })()
    this.ready.catch(() => (this.ready = undefined))
    return this.ready
  }
}

/** Anything thrown before a commit could land becomes a fault the gate can act on. */
function asFault(e: unknown): DispatchFault {
  if (e instanceof DispatchFault) return e
  if (e instanceof InputError || e instanceof TargetError) return new DispatchFault('refused', e.message, { cause: e, hint: e.hint })
  if (e instanceof GitCommandError) {
    // A git that exited with a status refused (ignored path, patch does not apply); one that
    // could not start or was killed did nothing we kept (the branch did not move), so a retry is safe.
    if (e.exitCode !== null && !e.timedOut) return new DispatchFault('refused', `git ${e.args[0]}: ${firstLine(e.stderr)}`, { cause: e })
    return new DispatchFault('not-sent', e.message, { cause: e })
  }
  if (isInterlockError(e)) return new DispatchFault('refused', e.message, { cause: e })
  return new DispatchFault('not-sent', (e as Error)?.message ?? String(e), { cause: e })
}
