import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { JsonObject } from '../../../src/core/canonical-json.js'
import { toEffect } from '../../../src/core/effect.js'
import { ConfigError, DispatchFault, InputError } from '../../../src/core/errors.js'
import { GithubTarget, type GithubTargetOptions, type GithubTargetSettings } from '../../../src/core/targets/github/index.js'
import { githubFault } from '../../../src/core/targets/github/faults.js'
import type { ApplyContext } from '../../../src/core/targets/target.js'
import type { FaultMode } from '../../emulators/emulator.js'
import { GithubEmulator } from '../../emulators/github.js'
import { journalDispatched, journalText, sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'
import { dispatchFault } from '../../helpers/dispatch-fault.js'
import { thenMeanwhile } from '../../helpers/meanwhile.js'

const first: ApplyContext = { attempt: 1, recovering: false }
const THREAD = 'agent-1'
let gh: GithubEmulator
let sg: SqliteGate
const extra: GithubTarget[] = []

function target(over: Partial<GithubTargetSettings> = {}, options: GithubTargetOptions = {}): GithubTarget {
  return new GithubTarget('gh', { token: gh.token, owner: gh.owner, repo: gh.repo, baseUrl: gh.url, timeoutMs: 400, connectTimeoutMs: 400, ...over }, options)
}

beforeEach(async () => {
  gh = await new GithubEmulator().start()
  sg = await sqliteGate(() => [target()])
})
afterEach(async () => {
  for (const t of extra.splice(0)) await t.close()
  await sg.cleanup()
  await gh.close()
})

function own(t: GithubTarget): GithubTarget {
  extra.push(t)
  return t
}

async function mergeInput(n: number, args: JsonObject = {}) {
  const full = { pull_number: n, ...args }
  return { thread: THREAD, target: 'gh', action: 'merge', args: full, premises: await sg.gate.capture('gh', 'merge', full) }
}

function sent(method: string, fragment: string): number {
  return gh.requests.filter((r) => r.method === method && r.path.includes(fragment)).length
}

async function fault(p: Promise<unknown>): Promise<DispatchFault> {
  const e = await dispatchFault(p)
  expect(JSON.stringify({ m: (e as Error).message, j: (e as DispatchFault).toJSON() })).not.toContain(gh.token)
  return e as DispatchFault
}

describe('GitHub merge through a gate on SQLite', () => {
  it('merges with sha = the premised head and the effect trailer; query finds it; the token is nowhere in the journal', async () => {
    const pr = gh.openPull({ title: 'Add widgets' })
    const baseBefore = gh.branches.get('main')
    const input = await mergeInput(pr.number)
    expect(input.premises).toEqual({ pull_number: 1, head_sha: pr.headSha, base_ref: 'main', state: 'open', merged: false, mergeable: true })

    const out = await sg.gate.submit(input)
    expect(out.status).toBe('committed')
    if (out.status !== 'committed') return
    const merged = gh.pull(pr.number)
    expect(out.receipt).toEqual({ sha: merged.mergeCommitSha, pull_number: 1 })
    expect(gh.count(out.effectId)).toBe(1)
    const commit = gh.commits.get(merged.mergeCommitSha!)!
    expect(commit.parents).toEqual([baseBefore, pr.headSha])
    expect(commit.message.split('\n').at(-1)).toBe(`Interlock-Effect: ${out.effectId}`)
    expect(gh.branches.get('main')).toBe(commit.sha)

    const e = toEffect(input)
    expect(await sg.gate.target('gh').query!(e)).toEqual(out.receipt)
    expect(await journalText(sg.store)).not.toContain(gh.token)
  })

  it('squash merges when the effect asks for it, with its own title and message above the trailer', async () => {
    const pr = gh.openPull()
    const out = await sg.gate.submit(await mergeInput(pr.number, { merge_method: 'squash', commit_title: 'Widgets (#1)', message: 'Adds widgets.' }))
    expect(out.status).toBe('committed')
    const commit = gh.commits.get(gh.pull(pr.number).mergeCommitSha!)!
    expect(commit.parents).toHaveLength(1)
    expect(commit.message).toBe(`Widgets (#1)\n\nAdds widgets.\n\nInterlock-Effect: ${out.effectId}`)
  })

  it('query finds a merge buried under more than 100 later commits, through the pull request', async () => {
    const pr = gh.openPull()
    const input = await mergeInput(pr.number)
    const out = await sg.gate.submit(input)
    for (let i = 0; i < 101; i++) gh.commitOn('main', `later ${i}`)
    expect(await sg.gate.target('gh').query!(toEffect(input))).toEqual({ sha: gh.pull(pr.number).mergeCommitSha, pull_number: 1 })
    expect(out.status).toBe('committed')
  })
})

describe('GitHub merge premises', () => {
  it('a head that moved after the decision: REJECTED by validatePremises, nothing merged', async () => {
    const pr = gh.openPull()
    const decided = pr.headSha
    const input = await mergeInput(pr.number)
    const moved = gh.pushToPull(pr.number)
    const out = await sg.gate.submit(input)
    expect(out).toMatchObject({ status: 'rejected', violations: [`the head of pull request #1 moved from ${decided} to ${moved}`] })
    expect(gh.count(out.effectId)).toBe(0)
    expect(sent('PUT', '/merge')).toBe(0)
  })

  it('closed or already merged: REJECTED', async () => {
    const a = gh.openPull()
    const b = gh.openPull()
    const inputA = await mergeInput(a.number)
    const inputB = await mergeInput(b.number)
    gh.pull(a.number).state = 'closed'
    await sg.gate.submit(await mergeInput(b.number, { message: 'merged once already' }))
    expect(await sg.gate.submit(inputA)).toMatchObject({ status: 'rejected', violations: ['pull request #1 is closed'] })
    const again = await sg.gate.submit(inputB)
    expect(again).toMatchObject({ status: 'rejected', violations: [expect.stringMatching(/^pull request #2 is already merged \(as [0-9a-f]{40}\)$/)] })
  })

  it('a head that moves between the check and the merge: GitHub answers 409 (sha pushed down), REJECTED with its message', async () => {
    const pr = gh.openPull()
    const input = await mergeInput(pr.number)
    thenMeanwhile(sg.gate.target('gh'), () => gh.pushToPull(pr.number, 'pushed in the gap'))
    const out = await sg.gate.submit(input)
    expect(out).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('409): Head branch was modified. Review and try the merge again.')] })
    expect(sent('PUT', '/merge')).toBe(1)
    expect(gh.count(out.effectId)).toBe(0)
    expect(gh.pull(pr.number).merged).toBe(false)
  })

  it('not mergeable (GitHub had not computed it at decision time): 405, FAILED with GitHub\'s message', async () => {
    const pr = gh.openPull({ mergeable: null })
    const input = await mergeInput(pr.number)
    gh.pull(pr.number).mergeable = false
    const out = await sg.gate.submit(input)
    expect(out).toMatchObject({ status: 'failed', reason: expect.stringContaining('(405): Pull Request is not mergeable') })
    expect(gh.count(out.effectId)).toBe(0)
  })

  it('premises without head_sha are refused: the merge must be bound to a head', async () => {
    const pr = gh.openPull()
    const out = await sg.gate.submit({ thread: THREAD, target: 'gh', action: 'merge', args: { pull_number: pr.number }, premises: {} })
    expect(out).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('premises.head_sha is missing')] })
    expect(sent('PUT', '/merge')).toBe(0)
  })
})

describe('GitHub merge: what GitHub says to try again is tried again, never FAILED', () => {
  // One clock for GitHub, the target and the gate; the gate's sleeps move it on.
  let clock = 0
  let cg: SqliteGate
  beforeEach(async () => {
    clock = Date.parse('2031-05-01T12:00:00.000Z')
    gh.now = () => clock
    cg = await sqliteGate(() => [target({}, { now: () => clock })], { now: () => clock, onSleep: (ms) => (clock += ms) })
  })
  afterEach(async () => {
    await cg.cleanup()
  })
  async function input(n: number) {
    const args = { pull_number: n }
    return { thread: THREAD, target: 'gh', action: 'merge', args, premises: await cg.gate.capture('gh', 'merge', args) }
  }

  it('405 "Base branch was modified": tried again after the back-off, merged once onto the moved base', async () => {
    const pr = gh.openPull()
    const merge = await input(pr.number)
    gh.baseMovesDuringMerge(1)
    const out = await cg.gate.submit(merge)
    expect(out.status).toBe('committed')
    expect(sent('PUT', '/merge')).toBe(2)
    expect(gh.count(out.effectId)).toBe(1)
    const commit = gh.commits.get(gh.pull(pr.number).mergeCommitSha!)!
    expect(gh.commits.get(commit.parents[0]!)!.message).toBe('pushed to the base during the merge')
    expect(cg.slept).toEqual([1])
  })

  it('405 "Base branch was modified" on every try: returned to AUTHORIZED (nothing was merged), not FAILED; the next pass merges it once', async () => {
    const pr = gh.openPull()
    const merge = await input(pr.number)
    gh.baseMovesDuringMerge(3)
    const out = await cg.gate.submit(merge)
    expect(out).toMatchObject({ status: 'in_flight', state: 'AUTHORIZED', reason: expect.stringContaining('Base branch was modified') })
    expect(gh.count(out.effectId)).toBe(0)
    clock += 60_000
    const report = await cg.gate.recover()
    expect(report.effects).toMatchObject([{ found: 'AUTHORIZED', action: 'resumed', outcome: { status: 'committed' } }])
    expect(gh.count(out.effectId)).toBe(1)
  })

  it.each([403, 429] as const)('primary rate limit (%i, x-ratelimit-remaining: 0): waits in place until x-ratelimit-reset, then merges once', async (status) => {
    const pr = gh.openPull()
    const merge = await input(pr.number)
    // The premise check takes the last request of the window; the merge meets the limit.
    gh.primaryLimit({ remaining: 1, resetInSeconds: 20, status })
    const out = await cg.gate.submit(merge)
    expect(out.status).toBe('committed')
    expect(cg.slept).toEqual([20_000])
    expect(sent('PUT', '/merge')).toBe(2)
    expect(gh.count(out.effectId)).toBe(1)
  })

  it('primary rate limit an hour away: returned to AUTHORIZED until the reset, nothing slept; then premises re-checked, merged once', async () => {
    const pr = gh.openPull()
    const merge = await input(pr.number)
    gh.primaryLimit({ remaining: 1, resetInSeconds: 3600, status: 429 })
    const out = await cg.gate.submit(merge)
    const reset = new Date(clock + 3_600_000).toISOString()
    expect(out).toMatchObject({ status: 'in_flight', state: 'AUTHORIZED', notBefore: reset, reason: expect.stringContaining('primary rate limit') })
    expect(cg.slept).toEqual([])
    expect(sent('PUT', '/merge')).toBe(1)

    clock += 3_599_000
    expect((await cg.gate.recover()).skipped.recent).toBe(1)
    expect(sent('PUT', '/merge')).toBe(1)
    clock += 1_000
    const report = await cg.gate.recover()
    expect(report.effects).toMatchObject([{ found: 'AUTHORIZED', action: 'resumed', outcome: { status: 'committed' } }])
    expect(sent('PUT', '/merge')).toBe(2)
    expect(gh.count(out.effectId)).toBe(1)
    expect((await cg.store.history(out.effectId)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
  })

  it('secondary rate limit with retry-after: waits that long in place, then merges once', async () => {
    const pr = gh.openPull()
    const merge = await input(pr.number)
    gh.secondaryLimit({ route: 'PUT ', retryAfterSeconds: 5 })
    const out = await cg.gate.submit(merge)
    expect(out.status).toBe('committed')
    expect(cg.slept).toEqual([5_000])
    expect(gh.count(out.effectId)).toBe(1)
  })

  it('secondary rate limit without retry-after: at least a minute, longer than max_wait_ms, so returned until then', async () => {
    const pr = gh.openPull()
    const merge = await input(pr.number)
    gh.secondaryLimit({ route: 'PUT ', status: 403 })
    const out = await cg.gate.submit(merge)
    expect(out).toMatchObject({ status: 'in_flight', state: 'AUTHORIZED', notBefore: new Date(clock + 60_000).toISOString() })
    expect(out.status === 'in_flight' && out.reason).toContain('exceeded a secondary rate limit')
    clock += 60_000
    expect((await cg.gate.recover()).counts).toEqual({ committed: 1 })
    expect(gh.count(out.effectId)).toBe(1)
  })

  it('a 403 that is no rate limit is a refusal; a 405 other than a moved base keeps meaning FAILED', () => {
    const answer = (status: number, message: string, headers: Record<string, string> = {}) => ({ status, body: { message }, text: '', headers })
    const perm = githubFault(answer(403, 'Resource not accessible by integration', { 'x-ratelimit-remaining': '4999', 'x-ratelimit-reset': '1999999999' }), 'merge', 'gh', clock)
    expect(perm?.kind).toBe('refused')
    expect(githubFault(answer(405, 'Merge commits are not allowed on this repository.'), 'merge', 'gh', clock)?.kind).toBe('refused')
    expect(githubFault(answer(405, 'Base branch was modified. Review and try the merge again.'), 'merge', 'gh', clock)?.kind).toBe('retry-later')
    // A reset our clock already sees as past (skew) is still not an immediate retry.
    const skewed = githubFault(answer(403, 'API rate limit exceeded', { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(clock / 1000 - 5) }), 'merge', 'gh', clock)
    expect(skewed).toMatchObject({ kind: 'retry-later', retryAfterMs: 1_000 })
  })
})

describe('GitHub merge: every fault, then crash recovery', () => {
  const cases: [FaultMode, boolean][] = [
    ['apply-then-drop', true],
    ['reset-after-apply', true],
    ['reset-before-apply', false],
    ['5xx', false],
    ['hang', false],
  ]
  for (const [mode, lands] of cases) {
    it(`${mode}: the merge lands exactly once, ${lands ? 'found by query' : 'applied after query'}`, async () => {
      const pr = gh.openPull()
      const effect = toEffect(await mergeInput(pr.number))
      await journalDispatched(sg.store, effect, 2)
      gh.fault({ mode, route: 'PUT /repos/acme/widgets/pulls/' })
      // The request in flight when the process died.
      const lost = await fault(sg.gate.target('gh').apply(effect, first))
      expect(lost.kind).toBe('unknown')
      expect(gh.count(effect.id)).toBe(lands ? 1 : 0)

      const next = await sg.restart()
      const report = await next.gate.recover()
      expect(report.effects).toEqual([
        expect.objectContaining({ effectId: effect.id, found: 'DISPATCHED', action: lands ? 'found-by-query' : 'applied-after-query' }),
      ])
      expect(report.effects[0]!.outcome).toEqual({
        status: 'committed',
        effectId: effect.id,
        receipt: { sha: gh.pull(pr.number).mergeCommitSha, pull_number: 1 },
        via: lands ? 'query' : 'apply',
      })
      expect(gh.count(effect.id)).toBe(1)
      expect(sent('PUT', '/merge')).toBe(lands ? 1 : 2)
    })
  }

  it('a gate out of tries leaves the effect in flight; recovery finishes it', async () => {
    const pr = gh.openPull()
    const once = await sqliteGate(() => [target()], { retry: { maxAttempts: 1 } })
    try {
      gh.fault({ mode: '5xx', status: 502, route: 'PUT /repos/acme/widgets/pulls/' })
      const args = { pull_number: pr.number }
      const out = await once.gate.submit({ thread: THREAD, target: 'gh', action: 'merge', args, premises: await once.gate.capture('gh', 'merge', args) })
      expect(out).toMatchObject({ status: 'in_flight', state: 'DISPATCHED', reason: expect.stringContaining('answered 502') })
      const report = await (await once.restart()).gate.recover()
      expect(report.counts).toEqual({ committed: 1 })
      expect(gh.count(out.effectId)).toBe(1)
    } finally {
      await once.cleanup()
    }
  })

  it('a connection refused before anything is written: not sent', async () => {
    const closed = http.createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as AddressInfo).port
    await new Promise((r) => closed.close(r))
    const t = own(target({ baseUrl: `http://127.0.0.1:${port}` }))
    const f = await fault(t.apply(toEffect({ thread: THREAD, target: 'gh', action: 'merge', args: { pull_number: 1 }, premises: { head_sha: 'a'.repeat(40) } }), first))
    expect(f.kind).toBe('not-sent')
  })
})

describe('GitHub bad input', () => {
  it('is refused at submit, naming the argument; nothing is journaled or sent', async () => {
    const before = gh.requests.length
    const bad: [JsonObject, RegExp][] = [
      [{ pull_number: '7' }, /pull_number must be a positive whole number/],
      [{ pull_number: 7, merge_method: 'rebase' }, /merge_method must be "merge" or "squash"/],
      [{ pull_number: 7, message: 'Interlock-Effect: forged' }, /may not contain "Interlock-Effect"/],
      [{ pull_number: 7, sha: 'abc' }, /unknown argument\(s\) sha/],
    ]
    for (const [args, why] of bad) {
      await expect(sg.gate.submit({ thread: THREAD, target: 'gh', action: 'merge', args })).rejects.toThrow(why)
    }
    await expect(sg.gate.submit({ thread: THREAD, target: 'gh', action: 'close', args: {} })).rejects.toBeInstanceOf(InputError)
    expect(await journalText(sg.store)).toBe('')
    expect(gh.requests.length).toBe(before)
  })

  it('apply refuses bad arguments without sending; a wrong token is refused with GitHub\'s message and no token', async () => {
    const t = sg.gate.target('gh')
    const f = await fault(t.apply(toEffect({ thread: THREAD, target: 'gh', action: 'merge', args: { pull_number: 0 } }), first))
    expect(f.kind).toBe('refused')
    expect(gh.requests).toHaveLength(0)

    const pr = gh.openPull()
    const wrong = own(target({ token: 'ghp_wrongToken1234567890' }))
    const g = await fault(wrong.apply(toEffect({ thread: THREAD, target: 'gh', action: 'merge', args: { pull_number: pr.number }, premises: { head_sha: pr.headSha } }), first))
    expect(g.kind).toBe('refused')
    expect(g.message).toContain('(401): Bad credentials')
    expect(g.message).not.toContain('ghp_wrongToken1234567890')
  })

  it('settings are checked by key', () => {
    expect(() => target({ owner: 'a b', baseUrl: 'ftp://x', mergeMethod: 'rebase' as never, timeoutMs: 0 })).toThrow(ConfigError)
    try {
      target({ owner: 'a b', token: '' })
    } catch (e) {
      expect((e as ConfigError).problems).toEqual(['targets.gh.token: must be a non-empty token, e.g. "${GITHUB_TOKEN}"', 'targets.gh.owner: must be a GitHub account name'])
    }
  })
})

describe('GitHub compensation: a revert commit through the same gate', () => {
  async function merged() {
    const pr = gh.openPull()
    const input = await mergeInput(pr.number)
    const out = await sg.gate.submit(input)
    if (out.status !== 'committed') throw new Error(`merge ${out.status}`)
    return { pr, effect: toEffect(input), receipt: out.receipt }
  }

  it('reverts to the tree before the merge, on top of it, with its own trailer; query finds it', async () => {
    const { effect, receipt } = await merged()
    const mergeCommit = gh.commits.get(String(receipt.sha))!
    const comp = await sg.gate.target('gh').compensation!(effect, receipt)
    expect(comp).toEqual({ action: 'revert', args: { merge_sha: receipt.sha, base: 'main', pull_number: 1 }, premises: { base_ref: 'main', base_head: receipt.sha } })

    const out = await sg.gate.submit({ thread: THREAD, target: 'gh', ...comp })
    expect(out.status).toBe('committed')
    if (out.status !== 'committed') return
    const revert = gh.commits.get(gh.branches.get('main')!)!
    expect(out.receipt).toEqual({ sha: revert.sha, reverted: receipt.sha, branch: 'main' })
    expect(revert.parents).toEqual([mergeCommit.sha])
    expect(revert.tree).toBe(gh.commits.get(mergeCommit.parents[0]!)!.tree)
    expect(revert.message).toBe(`Revert "${mergeCommit.message.split('\n')[0]}"\n\nThis reverts commit ${mergeCommit.sha}.\n\nInterlock-Effect: ${out.effectId}`)
    expect(gh.count(out.effectId)).toBe(1)
    expect(await sg.gate.target('gh').query!(toEffect({ thread: THREAD, target: 'gh', ...comp }))).toEqual(out.receipt)
  })

  it('is REJECTED when the base branch moved on after the merge (a revert would undo that work too)', async () => {
    const { effect, receipt } = await merged()
    const comp = await sg.gate.target('gh').compensation!(effect, receipt)
    const hotfix = gh.commitOn('main', 'hotfix')
    const out = await sg.gate.submit({ thread: THREAD, target: 'gh', ...comp })
    expect(out).toMatchObject({ status: 'rejected', violations: [`branch main moved from ${receipt.sha} to ${hotfix.sha} since the revert was decided`] })
    expect(gh.branches.get('main')).toBe(hotfix.sha)
  })

  it('a push between the check and the ref update is refused by GitHub (no fast-forward): REJECTED, the push survives', async () => {
    const { effect, receipt } = await merged()
    const comp = await sg.gate.target('gh').compensation!(effect, receipt)
    let pushed = ''
    thenMeanwhile(sg.gate.target('gh'), () => (pushed = gh.commitOn('main', 'pushed in the gap').sha))
    const out = await sg.gate.submit({ thread: THREAD, target: 'gh', ...comp })
    expect(out).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('Update is not a fast forward')] })
    expect(gh.branches.get('main')).toBe(pushed)
    expect(gh.count(out.effectId)).toBe(0)
  })

  for (const [mode, route, lands] of [
    ['apply-then-drop', 'PATCH /repos/acme/widgets/git/refs/', true],
    ['reset-before-apply', 'PATCH /repos/acme/widgets/git/refs/', false],
    ['reset-after-apply', 'POST /repos/acme/widgets/git/commits', false],
  ] as const) {
    it(`${mode} on ${route.split(' ')[0]}: the revert lands exactly once after recovery`, async () => {
      const { effect, receipt } = await merged()
      const comp = await sg.gate.target('gh').compensation!(effect, receipt)
      const revert = toEffect({ thread: THREAD, target: 'gh', ...comp })
      await journalDispatched(sg.store, revert, 2)
      gh.fault({ mode, route })
      expect((await fault(sg.gate.target('gh').apply(revert, first))).kind).toBe('unknown')
      const report = await (await sg.restart()).gate.recover()
      expect(report.effects[0]).toMatchObject({ action: lands ? 'found-by-query' : 'applied-after-query', outcome: { status: 'committed' } })
      expect(gh.count(revert.id)).toBe(1)
      expect(gh.commits.get(gh.branches.get('main')!)!.parents).toEqual([receipt.sha])
    })
  }
})
