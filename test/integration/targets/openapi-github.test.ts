/**
 * `targets from-openapi` on a real published document: GitHub's REST
 * description as @octokit/openapi ships it (12 MB). The generated section
 * is loaded by Interlock's own config loader, and used through a real Gate
 * on a real journal it drives the GitHub emulator (src/emulators/github.ts):
 * the issue is made, the pull request merged, with the arguments given.
 * Judged by the emulator's own records, never the journal.
 */
import { parse as parseToml } from 'smol-toml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../../src/core/config/load.js'
import type { EffectInput } from '../../../src/core/effect.js'
import type { InterlockError } from '../../../src/core/errors.js'
import { loadOpenApi } from '../../../src/core/targets/http/openapi/document.js'
import { listOpenApiOperations, targetFromOpenApi, type FromOpenApiOptions, type GeneratedTarget } from '../../../src/core/targets/http/openapi/from-openapi.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import { GithubEmulator } from '../../emulators/github.js'
import { GITHUB_OPENAPI as GITHUB_DOCUMENT } from '../../helpers/declared-apis.js'
import { sqliteGate } from '../../helpers/sqlite-gate.js'

let github: GithubEmulator
beforeAll(async () => {
  github = await new GithubEmulator().start()
})
afterAll(() => github.close())

function generate(operations: string[], options: Partial<FromOpenApiOptions> = {}): GeneratedTarget {
  return targetFromOpenApi(GITHUB_DOCUMENT, { operations, server: github.url, auth: 'bearer', ...options })
}

function configOf(gen: GeneratedTarget) {
  return parseConfig(gen.toml, { file: '/srv/agent/interlock.toml', env: { GITHUB_TOKEN: github.token } })
}

/** Submits each call through a Gate whose targets are the generated section's. */
async function submit(gen: GeneratedTarget, ...calls: EffectInput[]) {
  const config = configOf(gen)
  const g = await sqliteGate(() => [...createTargets(config.targets).values()])
  try {
    const outcomes = []
    for (const call of calls) outcomes.push(await g.gate.submit(call))
    return outcomes
  } finally {
    await g.cleanup()
  }
}

describe("GitHub's published REST description", () => {
  it('loads fast enough, and once per process: parsed again only when the file changes', () => {
    const started = performance.now()
    const first = loadOpenApi(GITHUB_DOCUMENT)
    const firstMs = performance.now() - started
    const again = performance.now()
    expect(loadOpenApi(GITHUB_DOCUMENT)).toBe(first)
    const cachedMs = performance.now() - again
    // Measured on the 2-core test machine: ~0.2 s the first time, well under 1 ms from the cache.
    expect(firstMs).toBeLessThan(5000)
    expect(cachedMs).toBeLessThan(50)
  })

  it.each([
    ['issues/create', 'issues_create', 'POST', '/repos/{args.owner}/{args.repo}/issues', ['owner', 'repo', 'title']],
    ['pulls/merge', 'pulls_merge', 'PUT', '/repos/{args.owner}/{args.repo}/pulls/{args.pull_number}/merge', ['owner', 'repo', 'pull_number']],
    ['repos/create-or-update-file-contents', 'repos_create_or_update_file_contents', 'PUT', '/repos/{args.owner}/{args.repo}/contents/{args.path}', ['owner', 'repo', 'path', 'message', 'content']],
    ['issues/create-comment', 'issues_create_comment', 'POST', '/repos/{args.owner}/{args.repo}/issues/{args.issue_number}/comments', ['owner', 'repo', 'issue_number', 'body']],
    ['git/create-ref', 'git_create_ref', 'POST', '/repos/{args.owner}/{args.repo}/git/refs', ['owner', 'repo', 'ref', 'sha']],
  ])('%s: a section Interlock\'s config loader takes as it is', (operation, action, method, path, args) => {
    const gen = generate([operation])
    expect(gen).toMatchObject({ name: 'github', tier: 3, variables: ['GITHUB_TOKEN'] })
    const target = configOf(gen).targets.github!
    if (target.type !== 'http') throw new Error('not an http target')
    expect(target.tier).toBe(3)
    expect(target.headers).toEqual({ Authorization: `Bearer ${github.token}` })
    expect(target.actions![action]).toMatchObject({ method, url: `${github.url}${path}`, args })
    // Tier 3, with what to check by hand for tier 2, in the text a person reads.
    expect(gen.toml).toContain(`[targets.github.actions.${action}.query]`)
  })

  it('every one of its writes, every optional part included, gives a section that loads, or is refused for a body an http target cannot send', () => {
    const writes = listOpenApiOperations(GITHUB_DOCUMENT).operations
    expect(writes.length).toBeGreaterThan(500)
    const refused: string[] = []
    const broken: string[] = []
    for (const op of writes) {
      let gen: GeneratedTarget
      try {
        gen = generate([op.operationId!], { include: ['all'] })
      } catch (e) {
        refused.push(`${(e as InterlockError).code}: ${(e as Error).message}`)
        continue
      }
      try {
        configOf(gen)
      } catch (e) {
        broken.push(`${op.operationId}: ${(e as Error).message} ${JSON.stringify((e as { problems?: unknown }).problems ?? [])}`)
      }
    }
    expect(broken).toEqual([])
    // markdown/render-raw (text/plain) and repos/upload-release-asset (application/octet-stream).
    expect(refused).toHaveLength(2)
    for (const r of refused) expect(r).toMatch(/^E_INPUT: operation \S+ sends its body as .*, which an http target cannot send/)
  })

  it('without --server and --auth: the document\'s own server, and no credential invented (GitHub\'s document declares none)', () => {
    const gen = targetFromOpenApi(GITHUB_DOCUMENT, { operations: ['issues/create'] })
    const action = (parseToml(gen.toml) as any).targets.github.actions.issues_create
    expect(action.url).toBe('https://api.github.com/repos/{args.owner}/{args.repo}/issues')
    expect(gen.toml).not.toContain('Authorization')
    expect(gen.notes.join('\n')).toContain('declares no security scheme')
    expect(gen.notes.join('\n')).toContain('body properties: body, assignee, milestone, labels, assignees, issue_field_values, type')
  })
})

describe('the generated target drives the GitHub emulator through a Gate', () => {
  it('issues/create: the issue is made with the title and body given; COMMITTED with its id as the receipt', async () => {
    const gen = generate(['issues/create'], { include: ['body', 'labels'] })
    const [outcome] = await submit(gen, {
      thread: 'openapi-1',
      target: 'github',
      action: 'issues_create',
      args: { owner: github.owner, repo: github.repo, title: 'Checkout fails on step 3', body: 'Seen by three customers today.', labels: ['bug'] },
    })
    const made = [...github.issues.values()].find((i) => i.title === 'Checkout fails on step 3')
    expect(made).toMatchObject({ body: 'Seen by three customers today.', labels: ['bug'], state: 'open' })
    expect(outcome).toMatchObject({ status: 'committed', via: 'apply', receipt: { status: 201, id: made!.id } })
  })

  it('pulls/merge: the pull request is merged, by the method given; then a comment on it', async () => {
    const pull = github.openPull({ title: 'Add retries' })
    const gen = generate(['pulls/merge', 'issues/create-comment'], { include: ['merge_method', 'sha'] })
    const [merged, commented] = await submit(
      gen,
      { thread: 'openapi-2', target: 'github', action: 'pulls_merge', args: { owner: github.owner, repo: github.repo, pull_number: pull.number, merge_method: 'squash', sha: pull.headSha } },
      { thread: 'openapi-2', target: 'github', action: 'issues_create_comment', args: { owner: github.owner, repo: github.repo, issue_number: pull.number, body: 'Merged by the agent.' } },
    )
    expect(github.pull(pull.number)).toMatchObject({ merged: true, state: 'closed' })
    // Squashed: the merge commit has the base as its only parent.
    expect(github.commits.get(github.pull(pull.number).mergeCommitSha!)!.parents).toHaveLength(1)
    expect(merged).toMatchObject({ status: 'committed', receipt: { status: 200, id: github.pull(pull.number).mergeCommitSha } })
    expect(github.issues.get(pull.number)!.comments.map((c) => c.body)).toEqual(['Merged by the agent.'])
    expect(commented.status).toBe('committed')
  })

  it('pulls/merge with a head that moved since: GitHub\'s 409 is a definite refusal (FAILED), nothing merged', async () => {
    const pull = github.openPull({ title: 'Rename config' })
    const seen = pull.headSha
    github.pushToPull(pull.number)
    const gen = generate(['pulls/merge'], { include: ['sha'] })
    const [outcome] = await submit(gen, { thread: 'openapi-3', target: 'github', action: 'pulls_merge', args: { owner: github.owner, repo: github.repo, pull_number: pull.number, sha: seen } })
    expect(outcome.status).toBe('failed')
    expect(JSON.stringify(outcome)).toContain('Head branch was modified')
    expect(github.pull(pull.number).merged).toBe(false)
  })

  it('git/create-ref: the branch is made at the commit given', async () => {
    const main = github.branches.get('main')!
    const gen = generate(['git/create-ref'])
    const [outcome] = await submit(gen, { thread: 'openapi-4', target: 'github', action: 'git_create_ref', args: { owner: github.owner, repo: github.repo, ref: 'refs/heads/release-1', sha: main } })
    expect(outcome.status).toBe('committed')
    expect(github.branches.get('release-1')).toBe(main)
  })

  it('a call that lacks a required argument is refused at submit, naming it; nothing is sent', async () => {
    const before = github.requests.length
    const gen = generate(['issues/create'])
    const err = await submit(gen, { thread: 'openapi-5', target: 'github', action: 'issues_create', args: { owner: github.owner, repo: github.repo } }).catch((e: Error) => e)
    expect((err as Error).message).toContain('the call has no argument args.title')
    expect(github.requests.length).toBe(before)
  })
})
