/**
 * Jira Cloud's create issue declared only in interlock.toml
 * (test/helpers/declared-apis.ts): a JSON REST create with no idempotency
 * key, its body carrying the label interlock-<effect id>; tier 2 by a JQL
 * search for that label, whose answers lag behind writes as Atlassian
 * documents (settle_ms), and tier 3 for the action that declares no query.
 * Through a real gate on a real journal, against the emulator
 * (src/emulators/jira.ts). Judged by the emulator's own issues.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../../src/core/config/load.js'
import { toEffect } from '../../../src/core/effect.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import { registerContract, tierContract } from '../../../src/testing/index.js'
import { JiraEmulator } from '../../emulators/jira.js'
import { declaredTable, jiraCall, jiraToml, type DeclaredApi } from '../../helpers/declared-apis.js'
import { sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'

/** Short, for the test's sake; the real search takes seconds to minutes. */
const LAG_MS = 300
const SETTLE_MS = 700

let jira: JiraEmulator
beforeAll(async () => {
  jira = await new JiraEmulator().start()
  jira.searchLagMs = LAG_MS
})
afterAll(() => jira.close())
afterEach(() => jira.clearFaults())

function gateFor(declared: DeclaredApi = jiraToml(jira.url, jira.basicAuth, SETTLE_MS), retry = { maxAttempts: 8, backoffMs: 100 }): Promise<SqliteGate> {
  const config = parseConfig(declared.toml, { file: '/srv/agent/interlock.toml', env: declared.env })
  // Real sleeps: the search catches up in real time.
  return sqliteGate(() => [...createTargets(config.targets).values()], { retry, realSleep: true })
}

describe('Jira create issue, tier 2 by a JQL search for its label', () => {
  it('sends the body Jira reads (project, type, summary, an ADF description, the label); COMMITTED with the issue key as receipt', async () => {
    const g = await gateFor()
    try {
      const call = jiraCall('case-1')
      const outcome = await g.gate.submit(call)
      const [issue] = jira.issuesFor(toEffect(call).id)
      expect(issue!.fields).toMatchObject({
        project: { key: 'OPS' },
        issuetype: { name: 'Task' },
        summary: 'Refund stuck for case-1',
        labels: [`interlock-${toEffect(call).id}`],
        description: { type: 'doc', version: 1, content: [{ type: 'paragraph', content: [{ type: 'text', text: 'The refund has been pending for three days.' }] }] },
      })
      expect(outcome).toMatchObject({ status: 'committed', via: 'apply', receipt: { status: 201, id: issue!.key } })
    } finally {
      await g.cleanup()
    }
  })

  it('an answer lost after Jira made the issue: not believed "not found" until the search has caught up, then found: one issue', async () => {
    const g = await gateFor()
    try {
      const call = jiraCall('case-2')
      jira.fault({ mode: 'apply-then-drop' })
      const outcome = await g.gate.submit(call)
      expect(outcome).toMatchObject({ status: 'committed', via: 'query' })
      expect(jira.issuesFor(toEffect(call).id)).toHaveLength(1)
    } finally {
      await g.cleanup()
    }
  })

  it('a request Jira never acted on (a 500 before): sent again only once "not found" can be believed, one issue', async () => {
    const g = await gateFor()
    try {
      const call = jiraCall('case-3')
      jira.fault({ mode: '5xx' })
      const started = Date.now()
      expect((await g.gate.submit(call)).status).toBe('committed')
      expect(Date.now() - started).toBeGreaterThanOrEqual(SETTLE_MS)
      expect(jira.issuesFor(toEffect(call).id)).toHaveLength(1)
    } finally {
      await g.cleanup()
    }
  })

  it('a field Jira refuses is FAILED with its words; a rate limit waits as long as Retry-After says', async () => {
    const g = await gateFor()
    try {
      const bad = { ...jiraCall('case-4'), args: { project: 'NOPE', summary: 'x', description: 'y' } }
      const failed = await g.gate.submit(bad)
      expect(failed.status).toBe('failed')
      expect(JSON.stringify(failed)).toContain('valid project is required')

      const call = jiraCall('case-5')
      jira.rateLimitNext()
      expect((await g.gate.submit(call)).status).toBe('committed')
      expect(g.slept).toContain(1000)
      expect(jira.issuesFor(toEffect(call).id)).toHaveLength(1)
    } finally {
      await g.cleanup()
    }
  })
})

describe('tier 3 when no query is declared', () => {
  it('a lost answer is AMBIGUOUS, never sent again; a clean one COMMITTED', async () => {
    const g = await gateFor()
    try {
      const lost = jiraCall('case-6', 'create_issue_untracked')
      jira.fault({ mode: 'apply-then-drop' })
      expect((await g.gate.submit(lost)).status).toBe('ambiguous')
      expect(jira.issuesFor(toEffect(lost).id)).toHaveLength(1)
      const clean = jiraCall('case-7', 'create_issue_untracked')
      expect((await g.gate.submit(clean)).status).toBe('committed')
      expect(jira.issuesFor(toEffect(clean).id)).toHaveLength(1)
    } finally {
      await g.cleanup()
    }
  })
})

describe('what the declaration buys', () => {
  it('without settle_ms, the lagging search says "not found" right after a lost answer, and the issue is made twice; with it, once', async () => {
    for (const [settle, made] of [[null, 2], [SETTLE_MS, 1]] as const) {
      const g = await gateFor(jiraToml(jira.url, jira.basicAuth, settle))
      try {
        const call = jiraCall(`case-settle-${settle ?? 'none'}`)
        jira.fault({ mode: 'apply-then-drop' })
        expect((await g.gate.submit(call)).status).toBe('committed')
        expect(jira.issuesFor(toEffect(call).id), `settle_ms ${settle}`).toHaveLength(made)
      } finally {
        await g.cleanup()
      }
    }
  })

  it('without a template the envelope reaches Jira, which finds no fields in it: FAILED, nothing made', async () => {
    const bare = `[targets.jira]\ntype = "http"\ntier = 3\nurl = "${jira.url}/rest/api/3/issue"\nheaders = { Authorization = "\${JIRA_BASIC_AUTH}" }\n`
    const g = await gateFor({ toml: bare, env: { JIRA_BASIC_AUTH: jira.basicAuth } })
    try {
      const before = jira.issues.length
      const outcome = await g.gate.submit(jiraCall('case-8'))
      expect(outcome.status).toBe('failed')
      expect(JSON.stringify(outcome)).toContain('You must specify a summary of the issue.')
      expect(jira.issues.length).toBe(before)
    } finally {
      await g.cleanup()
    }
  })
})

// Its crash points run by the same kit: test/crash/crash-points-jira*.test.ts.
describe.each(['create_issue', 'create_issue_untracked'] as const)('the tier contract of %s (agent-interlock/testing)', (action) => {
  registerContract(
    tierContract({
      name: 'jira',
      service: {
        start: async () => {
          const j = await new JiraEmulator().start()
          j.searchLagMs = LAG_MS
          return j
        },
        stop: (j) => j.close(),
      },
      table: (j) => declaredTable(jiraToml(j.url, j.basicAuth, SETTLE_MS), 'jira'),
      env: (j) => jiraToml(j.url, j.basicAuth).env,
      call: (thread) => jiraCall(thread, action),
      applications: (effect, j) => j.issuesFor(effect.id).length,
    }),
    { it },
  )
})
