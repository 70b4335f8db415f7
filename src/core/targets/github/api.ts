/**
 * The few GitHub REST calls the target makes, each one request through the
 * shared HttpClient (timeouts, fault classes, secrets scrubbed). Callers decide
 * what a status means; this file only knows URLs and headers.
 *
 * References (REST API version 2022-11-28):
 * - https://docs.github.com/en/rest/pulls/pulls#get-a-pull-request
 * - https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request
 * - https://docs.github.com/en/rest/commits/commits#list-commits
 * - https://docs.github.com/en/rest/git/commits#get-a-commit-object
 * - https://docs.github.com/en/rest/git/commits#create-a-commit
 * - https://docs.github.com/en/rest/git/refs#get-a-reference
 * - https://docs.github.com/en/rest/git/refs#update-a-reference
 */
import type { JsonObject } from '../../canonical-json.js'
import { HttpClient, type HttpAnswer, type HttpClientOptions } from '../http/client.js'
import type { RequestGuard } from '../http/fence.js'

export interface GithubApiSettings {
  token: string
  owner: string
  repo: string
  /** https://api.github.com, or https://<host>/api/v3 for GitHub Enterprise Server. */
  baseUrl: string
  timeoutMs: number
  connectTimeoutMs: number
}

export type GithubAnswer = HttpAnswer

export class GithubApi {
  readonly http: HttpClient
  private readonly root: string
  private readonly base: string

  constructor(name: string, s: GithubApiSettings, options: HttpClientOptions = {}) {
    this.http = new HttpClient(
      name,
      {
        timeoutMs: s.timeoutMs,
        connectTimeoutMs: s.connectTimeoutMs,
        headers: {
          authorization: `Bearer ${s.token}`,
          accept: 'application/vnd.github+json',
          'x-github-api-version': '2022-11-28',
          // GitHub refuses requests without a User-Agent.
          'user-agent': 'interlock',
        },
      },
      { ...options, secrets: [s.token, ...(options.secrets ?? [])] },
    )
    this.base = s.baseUrl.replace(/\/+$/, '')
    this.root = `${s.baseUrl.replace(/\/+$/, '')}/repos/${encodeURIComponent(s.owner)}/${encodeURIComponent(s.repo)}`
  }

  getPull(n: number): Promise<GithubAnswer> {
    return this.call('GET', `/pulls/${n}`)
  }

  mergePull(n: number, body: JsonObject, guard?: RequestGuard): Promise<GithubAnswer> {
    return this.call('PUT', `/pulls/${n}/merge`, body, guard)
  }

  /** Newest first, as GitHub lists them. */
  listCommits(ref: string, perPage = 100): Promise<GithubAnswer> {
    return this.call('GET', `/commits?${new URLSearchParams({ sha: ref, per_page: String(perPage) })}`)
  }

  getCommit(sha: string): Promise<GithubAnswer> {
    return this.call('GET', `/git/commits/${sha}`)
  }

  createCommit(body: { message: string; tree: string; parents: string[] }, guard?: RequestGuard): Promise<GithubAnswer> {
    return this.call('POST', '/git/commits', body, guard)
  }

  getBranch(branch: string): Promise<GithubAnswer> {
    return this.call('GET', `/git/ref/heads/${refPath(branch)}`)
  }

  /** Without force GitHub refuses anything but a fast-forward (422): the branch cannot be rewound. */
  updateBranch(branch: string, sha: string, guard?: RequestGuard): Promise<GithubAnswer> {
    return this.call('PATCH', `/git/refs/heads/${refPath(branch)}`, { sha, force: false }, guard)
  }

  /** `interlock check`: who the token is (https://docs.github.com/en/rest/users/users#get-the-authenticated-user). */
  getUser(signal?: AbortSignal): Promise<GithubAnswer> {
    return this.http.send('GET', `${this.base}/user`, {}, undefined, signal)
  }

  /** `interlock check`: the repository and the token's `permissions` on it (https://docs.github.com/en/rest/repos/repos#get-a-repository). */
  getRepo(signal?: AbortSignal): Promise<GithubAnswer> {
    return this.http.send('GET', this.root, {}, undefined, signal)
  }

  where(method: string): string {
    return this.http.where(method, this.root)
  }

  close(): Promise<void> {
    return this.http.close()
  }

  private call(method: string, path: string, body?: JsonObject, guard?: RequestGuard): Promise<GithubAnswer> {
    const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' }
    return this.http.send(method, `${this.root}${path}`, headers, body === undefined ? undefined : JSON.stringify(body), guard)
  }
}

function refPath(branch: string): string {
  return branch.split('/').map(encodeURIComponent).join('/')
}
