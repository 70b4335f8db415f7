/**
 * Linear's issueCreate declared only in interlock.toml (test/helpers/declared-apis.ts):
 * a GraphQL mutation carrying a marker, tier 2 by a GraphQL search for that
 * marker; through a real gate on a real journal, against the emulator that
 * follows Linear's documentation and SDK (src/emulators/linear.ts). Judged
 * by the emulator's own issues, never the journal.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../../src/core/config/load.js'
import { toEffect } from '../../../src/core/effect.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import { registerContract, tierContract } from '../../../src/testing/index.js'
import { LinearEmulator } from '../../emulators/linear.js'
import { declaredTable, linearCall, linearToml, type DeclaredApi } from '../../helpers/declared-apis.js'
import { sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'

let linear: LinearEmulator
beforeAll(async () => {
  linear = await new LinearEmulator().start()
})
afterAll(() => linear.close())
afterEach(() => linear.clearFaults())

function gateFor(declared: DeclaredApi = linearToml(linear.url), maxAttempts = 3): Promise<SqliteGate> {
  const config = parseConfig(declared.toml, { file: '/srv/agent/interlock.toml', env: declared.env })
  return sqliteGate(() => [...createTargets(config.targets).values()], { retry: { maxAttempts, backoffMs: 1 } })
}

describe('Linear issueCreate, tier 2 by a GraphQL search for its marker', () => {
  it('sends the mutation with its variables; COMMITTED with the issue id as receipt, the marker in the description', async () => {
    const g = await gateFor()
    try {
      const call = linearCall('ticket-1', linear.teamId)
      const outcome = await g.gate.submit(call)
      const [issue] = linear.issuesFor(toEffect(call).id)
      expect(issue).toMatchObject({ title: 'Checkout fails for ticket-1', identifier: expect.stringMatching(/^ENG-\d+$/) })
      expect(issue!.description).toBe(`Customers see a 500 at the last step.\n\ninterlock-effect ${toEffect(call).id}`)
      expect(outcome).toMatchObject({ status: 'committed', via: 'apply', receipt: { status: 200, id: issue!.id } })
    } finally {
      await g.cleanup()
    }
  })

  it('an answer lost after Linear made the issue: the search finds it, COMMITTED by the query, one issue', async () => {
    const g = await gateFor()
    try {
      for (const mode of ['apply-then-drop', 'apply-then-5xx', 'reset-after-apply'] as const) {
        const call = linearCall(`ticket-${mode}`, linear.teamId)
        linear.fault({ mode })
        const outcome = await g.gate.submit(call)
        expect(outcome, mode).toMatchObject({ status: 'committed', via: 'query' })
        expect(linear.issuesFor(toEffect(call).id), mode).toHaveLength(1)
        expect((outcome as unknown as { receipt: { id: string } }).receipt.id).toBe(linear.issuesFor(toEffect(call).id)[0]!.id)
      }
    } finally {
      await g.cleanup()
    }
  })

  it('a request Linear never acted on (500 before, a reset before): the search finds nothing, sent again, one issue', async () => {
    const g = await gateFor()
    try {
      for (const mode of ['5xx', 'reset-before-apply'] as const) {
        const call = linearCall(`ticket-${mode}`, linear.teamId)
        linear.fault({ mode })
        expect((await g.gate.submit(call)).status, mode).toBe('committed')
        expect(linear.issuesFor(toEffect(call).id), mode).toHaveLength(1)
      }
    } finally {
      await g.cleanup()
    }
  })

  it('a GraphQL error in a 200 (no such team) is FAILED with Linear\'s message; a rate limit waits as long as Retry-After says', async () => {
    const g = await gateFor()
    try {
      const nowhere = linearCall('ticket-2', '00000000-0000-4000-8000-000000000000')
      const failed = await g.gate.submit(nowhere)
      expect(failed.status).toBe('failed')
      expect(JSON.stringify(failed)).toContain('Entity not found: Team')
      expect(linear.issuesFor(toEffect(nowhere).id)).toEqual([])

      const call = linearCall('ticket-3', linear.teamId)
      linear.rateLimitNext()
      expect((await g.gate.submit(call)).status).toBe('committed')
      expect(g.slept).toContain(1000)
      expect(linear.issuesFor(toEffect(call).id)).toHaveLength(1)
    } finally {
      await g.cleanup()
    }
  })

  it('left in flight (its only try lost), the next process asks before it sends: one issue', async () => {
    const g = await gateFor(linearToml(linear.url), 1)
    try {
      const call = linearCall('ticket-4', linear.teamId)
      linear.fault({ mode: 'apply-then-drop' })
      // One try, whose answer was lost: the last look finds it at once, or it is left for recovery.
      const first = await g.gate.submit(call)
      const next = await g.restart()
      await next.gate.recover()
      expect(['committed', 'in_flight']).toContain(first.status)
      expect((await next.store.get(toEffect(call).id))!.state).toBe('COMMITTED')
      expect(linear.issuesFor(toEffect(call).id)).toHaveLength(1)
    } finally {
      await g.cleanup()
    }
  })
})

describe('what the template buys', () => {
  it('without one, the envelope is no GraphQL request: Linear refuses it (400) and nothing is made', async () => {
    const bare = `[targets.linear]\ntype = "http"\ntier = 3\nurl = "${linear.url}/graphql"\nheaders = { Authorization = "\${LINEAR_API_KEY}" }\n`
    const g = await gateFor({ toml: bare, env: linearToml(linear.url).env })
    try {
      const before = linear.issues.length
      const outcome = await g.gate.submit(linearCall('ticket-5', linear.teamId))
      expect(outcome.status).toBe('failed')
      expect(JSON.stringify(outcome)).toContain('Must provide query string.')
      expect(linear.issues.length).toBe(before)
    } finally {
      await g.cleanup()
    }
  })
})

// Its crash points run by the same kit: test/crash/crash-points-linear.test.ts.
describe('the tier contract (agent-interlock/testing)', () => {
  registerContract(
    tierContract({
      name: 'linear',
      service: { start: () => new LinearEmulator().start(), stop: (l) => l.close() },
      table: (l) => declaredTable(linearToml(l.url), 'linear'),
      env: (l) => linearToml(l.url).env,
      call: (thread, l) => linearCall(thread, l.teamId),
      applications: (effect, l) => l.issuesFor(effect.id).length,
    }),
    { it },
  )
})
