/**
 * A GitHub REST emulator with the behaviour the github target relies on, as
 * documented (REST API version 2022-11-28):
 *
 * - Get a pull request: `GET /repos/{o}/{r}/pulls/{n}`
 *   https://docs.github.com/en/rest/pulls/pulls#get-a-pull-request
 * - Merge a pull request: `PUT /repos/{o}/{r}/pulls/{n}/merge` with `sha`, `merge_method`,
 *   `commit_title`, `commit_message`; 200 {sha, merged, message}; 405 "Pull Request is not
 *   mergeable"; 409 "Head branch was modified. Review and try the merge again." when `sha`
 *   is not the head; 422 on bad input.
 *   https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request
 * - List commits: `GET /repos/{o}/{r}/commits?sha=<branch or sha>&per_page=<≤100>`, newest first.
 *   https://docs.github.com/en/rest/commits/commits#list-commits
 * - Git data: get/create a commit object, get/update a reference (update without `force`
 *   must be a fast-forward, else 422 "Update is not a fast forward").
 *   https://docs.github.com/en/rest/git/commits, https://docs.github.com/en/rest/git/refs
 * - Issues, as `interlock targets from-openapi` declares them from GitHub's own OpenAPI
 *   description: `POST /repos/{o}/{r}/issues` with `title` (required: 422 "Validation
 *   Failed", code missing_field, without it), `body`, `labels`, `assignees`; 201 with the
 *   issue (`id`, `number`, ...). Issues and pull requests share one number sequence.
 *   https://docs.github.com/en/rest/issues/issues#create-an-issue
 *   `POST /repos/{o}/{r}/issues/{n}/comments` with `body` (required); 201 with the comment;
 *   404 for an issue that does not exist (a pull request is an issue too).
 *   https://docs.github.com/en/rest/issues/comments#create-an-issue-comment
 * - Create a reference: `POST /repos/{o}/{r}/git/refs` with `ref` (fully qualified: it must
 *   start with refs/ and have at least two slashes) and `sha`; 201 with the reference; 422
 *   "Reference already exists" for one that does.
 *   https://docs.github.com/en/rest/git/refs#create-a-reference
 * - A missing or wrong token: 401 "Bad credentials".
 *   https://docs.github.com/en/rest/authentication/authenticating-to-the-rest-api
 * - Rate limits, as "Rate limits for the REST API" and "Troubleshooting the REST API"
 *   document them (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api,
 *   https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api#rate-limit-errors):
 *   every answer carries x-ratelimit-limit, -remaining, -used, -reset (UTC epoch seconds) and
 *   -resource; past the primary limit a request is answered 403 or 429 with
 *   x-ratelimit-remaining: 0 until the reset time (`primaryLimit`); past a secondary limit,
 *   403 or 429 with a message saying so, with or without retry-after (`secondaryLimit`).
 * - A merge while the base branch moves under it: 405 "Base branch was modified. Review and
 *   try the merge again." (`baseMovesDuringMerge`). The merge endpoint documents 405 for a
 *   merge that "cannot be performed" (https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request);
 *   this message is GitHub's own, and it says to try again: nothing was merged, and a new
 *   try merges onto the moved base.
 *
 * Trees are opaque ids here: a merge gets a new one, a revert reuses its target's.
 * What counts as an application (the ledger): a merge, and a branch moved to a
 * commit, each under the effect id its commit message's trailer names.
 */
import { createHash } from 'node:crypto'
import { Emulator, type EmulatorRequest, type EmulatorResponse } from './emulator.js'

export interface Commit {
  sha: string
  message: string
  tree: string
  parents: string[]
  /** Creation order, for "newest first". */
  seq: number
}

export interface Issue {
  id: number
  number: number
  title: string
  body: string | null
  labels: string[]
  assignees: string[]
  state: 'open' | 'closed'
  comments: IssueComment[]
}

export interface IssueComment {
  id: number
  body: string
}

export interface Pull {
  number: number
  title: string
  state: 'open' | 'closed'
  merged: boolean
  mergeable: boolean | null
  headRef: string
  headSha: string
  baseRef: string
  mergeCommitSha: string | null
}

const TRAILER = /^Interlock-Effect: ([0-9a-f]{64})$/m
const DOCS = 'https://docs.github.com/rest'
const RATE_LIMIT_DOCS = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api'
/** The primary limit of a personal access token, per hour. */
const PRIMARY_LIMIT = 5000

export interface SecondaryLimit {
  /** Only requests whose "METHOD path" starts with this (default: any). */
  route?: string
  /** Requests it answers (default 1). */
  times?: number
  status?: 403 | 429
  /** retry-after, in seconds; GitHub may send it or not. */
  retryAfterSeconds?: number
}

export class GithubEmulator extends Emulator {
  readonly commits = new Map<string, Commit>()
  readonly branches = new Map<string, string>()
  readonly pulls = new Map<number, Pull>()
  readonly issues = new Map<number, Issue>()
  /** References other than branches (refs/tags/...), by full name. */
  readonly refs = new Map<string, string>()
  /** The token's `permissions` on the repository, as GET /repos/{owner}/{repo} reports them. */
  permissions = { admin: false, maintain: false, push: true, triage: true, pull: true }
  /** The account GET /user names. */
  login = 'interlock-bot'
  /** The emulator's wall clock, epoch ms (rate-limit resets are told in its seconds). */
  now: () => number = Date.now
  private seq = 0
  /** Ids of issues and comments, as GitHub's are: numbers unique across the repository. */
  private nextId = 1000
  private primary = { remaining: PRIMARY_LIMIT, resetAt: 0, status: 403 as 403 | 429 }
  private secondary: (SecondaryLimit & { left: number })[] = []
  private baseMoves = 0

  constructor(
    readonly owner = 'acme',
    readonly repo = 'widgets',
    readonly token = 'ghp_emulatorToken000000000000000000000',
  ) {
    super()
    this.commitOn('main', 'Initial commit')
  }

  // ── Seeding, as a test (or another person) changes the repository ─────────

  /** A new commit on `branch` (created from `from`, or main, if missing) with a fresh tree. */
  commitOn(branch: string, message: string, from?: string): Commit {
    const parent = this.branches.get(branch) ?? (from ? this.branches.get(from) : this.branches.get('main'))
    const commit = this.makeCommit(message, this.newTree(message), parent ? [parent] : [])
    this.branches.set(branch, commit.sha)
    return commit
  }

  /** Opens a pull request from a new branch with one commit, into `base`. */
  openPull(opts: { number?: number; base?: string; head?: string; title?: string; mergeable?: boolean | null } = {}): Pull {
    const number = opts.number ?? this.nextNumber()
    const base = opts.base ?? 'main'
    const head = opts.head ?? `feature-${number}`
    const title = opts.title ?? `Change ${number}`
    const commit = this.commitOn(head, `${title}: work`, base)
    const pull: Pull = {
      number,
      title,
      state: 'open',
      merged: false,
      mergeable: opts.mergeable === undefined ? true : opts.mergeable,
      headRef: head,
      headSha: commit.sha,
      baseRef: base,
      mergeCommitSha: null,
    }
    this.pulls.set(number, pull)
    return pull
  }

  /** The next issue or pull request number: they share one sequence. */
  private nextNumber(): number {
    return Math.max(0, ...this.pulls.keys(), ...this.issues.keys()) + 1
  }

  /** Someone pushes another commit to the pull request's head branch. */
  pushToPull(n: number, message = 'more work'): string {
    const pull = this.pull(n)
    pull.headSha = this.commitOn(pull.headRef, message).sha
    return pull.headSha
  }

  pull(n: number): Pull {
    const p = this.pulls.get(n)
    if (!p) throw new Error(`no pull request #${n}`)
    return p
  }

  /** Commits reachable from `ref`, newest first (what List commits answers). */
  log(ref: string): Commit[] {
    const start = this.branches.get(ref) ?? (this.commits.has(ref) ? ref : undefined)
    if (!start) return []
    const seen = new Set<string>()
    const stack = [start]
    while (stack.length > 0) {
      const sha = stack.pop()!
      if (seen.has(sha)) continue
      seen.add(sha)
      stack.push(...this.commits.get(sha)!.parents)
    }
    return [...seen].map((s) => this.commits.get(s)!).sort((a, b) => b.seq - a.seq)
  }

  // ── Limits and races, as GitHub documents them ──────────────────────────

  /**
   * The primary rate limit: `remaining` more requests until `resetInSeconds` from now;
   * past them every request is answered `status` (GitHub uses 403 or 429) with
   * x-ratelimit-remaining: 0, until the reset time, when the full limit is back.
   */
  primaryLimit(opts: { remaining: number; resetInSeconds: number; status?: 403 | 429 }): void {
    this.primary = { remaining: opts.remaining, resetAt: Math.floor(this.now() / 1000) + opts.resetInSeconds, status: opts.status ?? 403 }
  }

  /** The next matching request(s) exceed a secondary rate limit. */
  secondaryLimit(limit: SecondaryLimit): void {
    this.secondary.push({ ...limit, left: limit.times ?? 1 })
  }

  /** The next `times` merges find that a push moved the base branch under them (405). */
  baseMovesDuringMerge(times = 1): void {
    this.baseMoves += times
  }

  // ── The REST API ─────────────────────────────────────────────────────────

  protected async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    const auth = req.headers.authorization ?? ''
    if (auth !== `Bearer ${this.token}` && auth !== `token ${this.token}`) {
      return { status: 401, body: { message: 'Bad credentials', documentation_url: DOCS } }
    }
    const limited = this.rateLimited(req)
    const res = limited ?? (await this.serve(req))
    return { ...res, headers: { ...this.rateHeaders(), ...res.headers } }
  }

  /** x-ratelimit-* headers, on every answer. */
  private rateHeaders(): Record<string, string> {
    const remaining = Math.max(0, this.primary.remaining)
    return {
      'x-ratelimit-limit': String(PRIMARY_LIMIT),
      'x-ratelimit-remaining': String(remaining),
      'x-ratelimit-used': String(PRIMARY_LIMIT - remaining),
      'x-ratelimit-reset': String(this.primary.resetAt),
      'x-ratelimit-resource': 'core',
    }
  }

  private rateLimited(req: EmulatorRequest): EmulatorResponse | undefined {
    const nowS = Math.floor(this.now() / 1000)
    if (this.primary.resetAt <= nowS) this.primary = { remaining: PRIMARY_LIMIT, resetAt: nowS + 3600, status: this.primary.status }
    if (this.primary.remaining <= 0) {
      return { status: this.primary.status, body: { message: 'API rate limit exceeded for user ID 1.', documentation_url: RATE_LIMIT_DOCS } }
    }
    this.primary.remaining--
    const key = `${req.method} ${req.path}`
    const i = this.secondary.findIndex((l) => !l.route || key.startsWith(l.route))
    if (i < 0) return undefined
    const limit = this.secondary[i]!
    if (--limit.left <= 0) this.secondary.splice(i, 1)
    return {
      status: limit.status ?? 403,
      body: { message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.', documentation_url: RATE_LIMIT_DOCS },
      headers: limit.retryAfterSeconds === undefined ? {} : { 'retry-after': String(limit.retryAfterSeconds) },
    }
  }

  private async serve(req: EmulatorRequest): Promise<EmulatorResponse> {
    const prefix = `/repos/${this.owner}/${this.repo}`
    // `interlock check`'s probes, read-only:
    // https://docs.github.com/en/rest/users/users#get-the-authenticated-user
    if (req.method === 'GET' && req.path === '/user') return { status: 200, body: { login: this.login, id: 1, type: 'Bot' } }
    // https://docs.github.com/en/rest/repos/repos#get-a-repository (`permissions` is present for an authenticated caller)
    if (req.method === 'GET' && req.path === prefix) {
      const body = { id: 1, name: this.repo, full_name: `${this.owner}/${this.repo}`, private: true, default_branch: 'main', permissions: { ...this.permissions } }
      return { status: 200, body }
    }
    if (!req.path.startsWith(`${prefix}/`)) return notFound()
    const rest = req.path.slice(prefix.length)
    let m: RegExpMatchArray | null
    if (req.method === 'GET' && (m = rest.match(/^\/pulls\/(\d+)$/))) return this.getPull(Number(m[1]))
    if (req.method === 'PUT' && (m = rest.match(/^\/pulls\/(\d+)\/merge$/))) return this.merge(req, Number(m[1]))
    if (req.method === 'POST' && rest === '/issues') return this.createIssue(req)
    if (req.method === 'POST' && (m = rest.match(/^\/issues\/(\d+)\/comments$/))) return this.createComment(req, Number(m[1]))
    if (req.method === 'POST' && rest === '/git/refs') return this.createRef(req)
    if (req.method === 'GET' && rest === '/commits') return this.listCommits(req)
    if (req.method === 'GET' && (m = rest.match(/^\/git\/commits\/([0-9a-f]{40})$/))) return this.getCommit(m[1]!)
    if (req.method === 'POST' && rest === '/git/commits') return this.createCommit(req)
    if (req.method === 'GET' && (m = rest.match(/^\/git\/ref\/heads\/(.+)$/))) return this.getRef(decodeURIComponent(m[1]!))
    if (req.method === 'PATCH' && (m = rest.match(/^\/git\/refs\/heads\/(.+)$/))) return this.updateRef(req, decodeURIComponent(m[1]!))
    return notFound()
  }

  private getPull(n: number): EmulatorResponse {
    const p = this.pulls.get(n)
    if (!p) return notFound()
    return {
      status: 200,
      body: {
        number: p.number,
        title: p.title,
        state: p.state,
        merged: p.merged,
        mergeable: p.merged ? null : p.mergeable,
        merge_commit_sha: p.mergeCommitSha,
        head: { ref: p.headRef, sha: p.headSha },
        base: { ref: p.baseRef, sha: this.branches.get(p.baseRef) ?? null },
      },
    }
  }

  private async merge(req: EmulatorRequest, n: number): Promise<EmulatorResponse> {
    const p = this.pulls.get(n)
    if (!p) return notFound()
    const body = parseJson(req.body)
    if (body === undefined) return { status: 400, body: { message: 'Problems parsing JSON', documentation_url: DOCS } }
    const method = body.merge_method ?? 'merge'
    if (!['merge', 'squash', 'rebase'].includes(method as string)) return validationFailed(`merge_method is not one of merge, squash, rebase`)
    if (p.state !== 'open' || p.merged || p.mergeable === false) {
      return { status: 405, body: { message: 'Pull Request is not mergeable', documentation_url: DOCS } }
    }
    if (body.sha !== undefined && body.sha !== p.headSha) {
      return { status: 409, body: { message: 'Head branch was modified. Review and try the merge again.', documentation_url: DOCS } }
    }
    if (this.baseMoves > 0) {
      // Someone else's push lands on the base while this merge is computed: nothing is merged.
      this.baseMoves--
      this.commitOn(p.baseRef, 'pushed to the base during the merge')
      return { status: 405, body: { message: 'Base branch was modified. Review and try the merge again.', documentation_url: DOCS } }
    }
    const title = typeof body.commit_title === 'string' ? body.commit_title : method === 'squash' ? `${p.title} (#${n})` : `Merge pull request #${n} from ${this.owner}/${p.headRef}`
    const extra = typeof body.commit_message === 'string' ? body.commit_message : p.title
    const message = `${title}\n\n${extra}`
    const sha = await this.apply(req, effectOf(message), () => {
      const base = this.branches.get(p.baseRef)!
      const parents = method === 'squash' ? [base] : [base, p.headSha]
      const commit = this.makeCommit(message, this.newTree(`${base}+${p.headSha}`), parents)
      this.branches.set(p.baseRef, commit.sha)
      Object.assign(p, { state: 'closed', merged: true, mergeCommitSha: commit.sha })
      return commit.sha
    })
    return { status: 200, body: { sha, merged: true, message: 'Pull Request successfully merged' } }
  }

  private async createIssue(req: EmulatorRequest): Promise<EmulatorResponse> {
    const body = parseJson(req.body)
    if (body === undefined) return { status: 400, body: { message: 'Problems parsing JSON', documentation_url: DOCS } }
    const title = typeof body.title === 'number' ? String(body.title) : body.title
    if (typeof title !== 'string' || title === '') return missingField('Issue', 'title')
    if (body.body !== undefined && body.body !== null && typeof body.body !== 'string') return validationFailed('body is not a string')
    const labels = Array.isArray(body.labels) ? body.labels.map((l) => (typeof l === 'string' ? l : (l as { name?: string })?.name)).filter((l): l is string => typeof l === 'string') : []
    const assignees = Array.isArray(body.assignees) ? body.assignees.filter((a): a is string => typeof a === 'string') : []
    const issue = await this.apply(req, undefined, () => {
      const made: Issue = { id: this.nextId++, number: this.nextNumber(), title, body: (body.body as string | null | undefined) ?? null, labels, assignees, state: 'open', comments: [] }
      this.issues.set(made.number, made)
      return made
    })
    return { status: 201, body: this.issueJson(issue) }
  }

  private issueJson(i: Issue): Record<string, unknown> {
    const url = `https://api.github.com/repos/${this.owner}/${this.repo}/issues/${i.number}`
    return {
      id: i.id,
      node_id: `I_${i.id}`,
      url,
      html_url: `https://github.com/${this.owner}/${this.repo}/issues/${i.number}`,
      number: i.number,
      state: i.state,
      title: i.title,
      body: i.body,
      user: { login: this.login },
      labels: i.labels.map((name) => ({ name })),
      assignees: i.assignees.map((login) => ({ login })),
      comments: i.comments.length,
    }
  }

  private async createComment(req: EmulatorRequest, n: number): Promise<EmulatorResponse> {
    const issue = this.issues.get(n)
    if (!issue && !this.pulls.has(n)) return notFound()
    const body = parseJson(req.body)
    if (body === undefined) return { status: 400, body: { message: 'Problems parsing JSON', documentation_url: DOCS } }
    if (typeof body.body !== 'string' || body.body === '') return missingField('IssueComment', 'body')
    const text = body.body
    const comment = await this.apply(req, undefined, () => {
      const made: IssueComment = { id: this.nextId++, body: text }
      // A pull request is an issue: its comments are kept on an issue of the same number.
      const on = issue ?? this.issueForPull(n)
      on.comments.push(made)
      return made
    })
    const url = `https://api.github.com/repos/${this.owner}/${this.repo}/issues`
    return { status: 201, body: { id: comment.id, node_id: `IC_${comment.id}`, url: `${url}/comments/${comment.id}`, issue_url: `${url}/${n}`, body: comment.body, user: { login: this.login } } }
  }

  private issueForPull(n: number): Issue {
    const pull = this.pull(n)
    const issue: Issue = { id: this.nextId++, number: n, title: pull.title, body: null, labels: [], assignees: [], state: 'open', comments: [] }
    this.issues.set(n, issue)
    return issue
  }

  private async createRef(req: EmulatorRequest): Promise<EmulatorResponse> {
    const body = parseJson(req.body)
    if (body === undefined) return { status: 400, body: { message: 'Problems parsing JSON', documentation_url: DOCS } }
    const { ref, sha } = body as { ref?: unknown; sha?: unknown }
    if (typeof ref !== 'string' || !ref.startsWith('refs/') || ref.split('/').length < 3) return validationFailed(`${String(ref)} is not a valid ref name.`)
    if (typeof sha !== 'string' || !this.commits.has(sha)) return validationFailed('Object does not exist')
    const branch = ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : undefined
    if (branch ? this.branches.has(branch) : this.refs.has(ref)) return { status: 422, body: { message: 'Reference already exists', documentation_url: DOCS } }
    await this.apply(req, undefined, () => (branch ? this.branches.set(branch, sha) : this.refs.set(ref, sha)))
    return { status: 201, body: { ref, node_id: `REF_${sha.slice(0, 8)}`, url: `https://api.github.com/repos/${this.owner}/${this.repo}/git/${ref}`, object: { type: 'commit', sha } } }
  }

  private listCommits(req: EmulatorRequest): EmulatorResponse {
    const ref = req.query.get('sha') ?? 'main'
    const perPage = Math.min(100, Number(req.query.get('per_page') ?? 30))
    if (!this.branches.has(ref) && !this.commits.has(ref)) return { status: 404, body: { message: `No commit found for SHA: ${ref}`, documentation_url: DOCS } }
    return { status: 200, body: this.log(ref).slice(0, perPage).map((c) => ({ sha: c.sha, commit: { message: c.message, tree: { sha: c.tree } }, parents: c.parents.map((sha) => ({ sha })) })) }
  }

  private getCommit(sha: string): EmulatorResponse {
    const c = this.commits.get(sha)
    if (!c) return notFound()
    return { status: 200, body: gitCommit(c) }
  }

  private async createCommit(req: EmulatorRequest): Promise<EmulatorResponse> {
    const body = parseJson(req.body)
    if (body === undefined) return { status: 400, body: { message: 'Problems parsing JSON', documentation_url: DOCS } }
    const { message, tree, parents } = body as { message?: unknown; tree?: unknown; parents?: unknown }
    if (typeof message !== 'string' || typeof tree !== 'string' || !Array.isArray(parents)) return validationFailed('message, tree and parents are required')
    if (![...this.commits.values()].some((c) => c.tree === tree)) return validationFailed('Tree SHA does not exist')
    if (!parents.every((s) => typeof s === 'string' && this.commits.has(s))) return validationFailed('Parent SHA does not exist or is not a commit object')
    // A commit object changes no branch: applied (so faults can hit it), not counted.
    const commit = await this.apply(req, undefined, () => this.makeCommit(message, tree, parents as string[]))
    return { status: 201, body: gitCommit(commit) }
  }

  private getRef(branch: string): EmulatorResponse {
    const sha = this.branches.get(branch)
    if (!sha) return notFound()
    return { status: 200, body: { ref: `refs/heads/${branch}`, object: { type: 'commit', sha } } }
  }

  private async updateRef(req: EmulatorRequest, branch: string): Promise<EmulatorResponse> {
    const body = parseJson(req.body)
    if (body === undefined || typeof body.sha !== 'string') return validationFailed('sha is required')
    const current = this.branches.get(branch)
    const next = this.commits.get(body.sha)
    if (!current) return { status: 422, body: { message: 'Reference does not exist', documentation_url: DOCS } }
    if (!next) return validationFailed('Object does not exist')
    if (body.force !== true && !this.log(next.sha).some((c) => c.sha === current)) {
      return { status: 422, body: { message: 'Update is not a fast forward', documentation_url: DOCS } }
    }
    await this.apply(req, effectOf(next.message), () => this.branches.set(branch, next.sha))
    return { status: 200, body: { ref: `refs/heads/${branch}`, object: { type: 'commit', sha: next.sha } } }
  }

  private makeCommit(message: string, tree: string, parents: string[]): Commit {
    const seq = ++this.seq
    const sha = createHash('sha1').update(`commit\0${seq}\0${tree}\0${parents.join(',')}\0${message}`).digest('hex')
    const commit = { sha, message, tree, parents, seq }
    this.commits.set(sha, commit)
    return commit
  }

  private newTree(salt: string): string {
    return createHash('sha1').update(`tree\0${this.seq}\0${salt}`).digest('hex')
  }
}

function gitCommit(c: Commit): Record<string, unknown> {
  return { sha: c.sha, message: c.message, tree: { sha: c.tree }, parents: c.parents.map((sha) => ({ sha })) }
}

function effectOf(message: string): string | undefined {
  return message.match(TRAILER)?.[1]
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text || '{}') as unknown
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

function notFound(): EmulatorResponse {
  return { status: 404, body: { message: 'Not Found', documentation_url: DOCS } }
}

/** GitHub's 422 for a required field left out: the validation-error schema of its OpenAPI description (components.responses.validation_failed), errors[].code "missing_field". */
function missingField(resource: string, field: string): EmulatorResponse {
  return { status: 422, body: { message: 'Validation Failed', errors: [{ resource, code: 'missing_field', field }], documentation_url: DOCS } }
}

function validationFailed(message: string): EmulatorResponse {
  return { status: 422, body: { message: 'Validation Failed', errors: [{ message }], documentation_url: DOCS } }
}
