/**
 * `interlock check`'s read-only probe of a GitHub target, two GETs:
 * - `GET /user` (https://docs.github.com/en/rest/users/users#get-the-authenticated-user):
 *   is the token accepted? 401 "Requires authentication" when it is not;
 * - `GET /repos/{owner}/{repo}` (https://docs.github.com/en/rest/repos/repos#get-a-repository):
 *   can the token see the repository, and may it push? The answer carries
 *   `permissions` for the authenticated token; merging a pull request needs
 *   push. A repository the token cannot see is a 404, as if it did not exist.
 * Fine-grained tokens and app installation tokens may be refused `/user`
 * (403) while the repository is readable: that is a warning, not a failure.
 */
import { serviceMessage } from '../http/body.js'
import { commonProbeAnswer } from '../http/probe-answer.js'
import type { ProbeResult } from '../target.js'
import type { GithubApi } from './api.js'

const CREDENTIAL = 'token (GITHUB_TOKEN)'

export async function probeGithub(api: GithubApi, owner: string, repo: string, signal?: AbortSignal): Promise<ProbeResult> {
  const user = await api.getUser(signal)
  const refused = commonProbeAnswer(user, api.where('GET'), CREDENTIAL)
  if (refused) return refused
  const login = (user.body as { login?: unknown } | null)?.login
  const who = user.status === 200 && typeof login === 'string' ? `as ${login}` : `(GET /user answered ${user.status})`

  const answer = await api.getRepo(signal)
  const common = commonProbeAnswer(answer, api.where('GET'), CREDENTIAL)
  if (common) return common
  if (answer.status === 404 || answer.status === 403) {
    return {
      ok: false,
      detail: `${owner}/${repo}: GET /repos answered ${answer.status} ${who}: the repository does not exist or the token cannot see it (${serviceMessage(answer.body)})`,
      fix: 'Check owner and repo, and give the token access to this repository.',
    }
  }
  if (answer.status !== 200) {
    return { ok: false, detail: `${owner}/${repo}: GET /repos answered ${answer.status}: ${serviceMessage(answer.body)}`, fix: 'Check base_url: https://api.github.com, or https://<host>/api/v3 for GitHub Enterprise Server.' }
  }
  const permissions = (answer.body as { permissions?: Record<string, unknown> } | null)?.permissions
  if (permissions && permissions.push !== true) {
    return {
      ok: false,
      detail: `${owner}/${repo} is readable ${who}, but the token may not push: merging a pull request needs write access`,
      fix: 'Give the token "Pull requests" and "Contents" write on this repository.',
    }
  }
  return { ok: true, warn: user.status !== 200, detail: `${owner}/${repo} readable and writable ${who}` }
}
