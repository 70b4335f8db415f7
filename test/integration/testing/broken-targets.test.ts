/**
 * The contract kit fails a target that breaks its tier's promise, with a
 * message naming what broke, and refuses a kit mistaken in its use:
 * - a tier-2 Jira declaration whose query searches for the wrong label (it
 *   never finds anything): the tier contract names the tier-2 query, and the
 *   crash point after apply finds the issue made twice;
 * - a tier-1 Twilio declaration against the API as its reference documents
 *   it (no deduplication by the token): applied twice, two messages;
 * - a changeWorld the target cannot see (no premises at all);
 * - a call that ignores its thread, or names another target; a table with a
 *   key interlock.toml does not have.
 */
import { describe, expect, it } from 'vitest'
import { crashPoints, tierContract, type ContractCase, type TargetUnderTest } from '../../../src/testing/index.js'
import { JiraEmulator } from '../../emulators/jira.js'
import { TwilioEmulator } from '../../emulators/twilio.js'
import { declaredTable, jiraCall, jiraToml, twilioCall, twilioToml } from '../../helpers/declared-apis.js'

const LAG_MS = 250
const SETTLE_MS = 600

/** Jira, tier 2, with one slip: the query looks for `interlock_<id>`, the body labels `interlock-<id>`. */
const misspelledQuery: TargetUnderTest<JiraEmulator> = {
  name: 'jira',
  service: {
    start: async () => {
      const j = await new JiraEmulator().start()
      j.searchLagMs = LAG_MS
      return j
    },
    stop: (j) => j.close(),
  },
  table: (j) => {
    const table = declaredTable(jiraToml(j.url, j.basicAuth, SETTLE_MS), 'jira') as { actions: { create_issue: { query: { params: Record<string, string> } } } }
    table.actions.create_issue.query.params.jql = 'labels = interlock_{effect_id}'
    return table
  },
  env: (j) => jiraToml(j.url, j.basicAuth).env,
  gate: { max_attempts: 8, backoff_ms: 100 },
  call: (thread) => jiraCall(thread),
  applications: (effect, j) => j.issuesFor(effect.id).length,
}

/** Twilio declared tier 1, against the API as its reference documents it: the token is not honoured. */
const undeduplicated: TargetUnderTest<TwilioEmulator> = {
  name: 'sms',
  service: {
    start: async () => {
      const t = await new TwilioEmulator().start()
      t.honoursToken = false
      return t
    },
    stop: (t) => t.close(),
  },
  table: (t) => declaredTable(twilioToml(t.url, t), 'sms'),
  env: (t) => twilioToml(t.url, t).env,
  call: (thread) => twilioCall(thread),
  applications: (effect, t) => t.count(effect.id),
}

/** Each case's error message, or 'passed'. */
async function verdicts(cases: ContractCase[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const c of cases) out[c.name] = await c.run().then(() => 'passed', (e: Error) => e.message)
  return out
}

describe('a target that breaks its promise fails the kit', () => {
  it('tier 2 whose query never finds the effect: the tier contract names the query, the rest passes', async () => {
    const got = await verdicts(tierContract(misspelledQuery))
    expect(got).toEqual({
      'jira: the target its table makes': 'passed',
      'jira: what its tier promises, by the service\'s own record': expect.stringMatching(/^tier 2: query\(\) answered null for effect [0-9a-f]{12}, which apply\(\) had just made: after a crash, recovery would apply it again/),
      'jira: premises hold while the world is unchanged': 'passed',
    })
  })

  it('the same target killed after apply: recovery asks the query, finds nothing, and makes the issue twice', async () => {
    const [killed] = crashPoints({ ...misspelledQuery, points: ['after-apply'] })
    await expect(killed!.run()).rejects.toThrow(/tier 2, killed after-apply: after recovery effect [0-9a-f]{12} is COMMITTED and the service made it 2 times; expected 1 \(recovery asks a tier-2 query first/)
  })

  it('tier 1 against a service that ignores the key: applied twice, made twice', async () => {
    const promise = tierContract(undeduplicated).find((c) => c.name.includes('tier promises'))!
    await expect(promise.run()).rejects.toThrow(/^tier 1: effect [0-9a-f]{12} applied again under the same effect id, as recovery re-applies it, and the service made it 2 times/)
  })

  it('a changed world the target cannot see: no premises, so nothing is violated', async () => {
    const cases = tierContract({ ...undeduplicated, changeWorld: () => {} })
    const changed = cases.find((c) => c.name === 'sms: premises are violated once the world changed')!
    await expect(changed.run()).rejects.toThrow(/found nothing wrong with effect [0-9a-f]{12} after changeWorld\(\) changed what it rests on \(the effect has no premises/)
  })
})

describe('a kit used wrongly says so', () => {
  const promiseOf = (t: TargetUnderTest<TwilioEmulator>) => tierContract(t).find((c) => c.name.includes('tier promises'))!

  it('a call that ignores its thread, or names another target', async () => {
    await expect(promiseOf({ ...undeduplicated, call: () => twilioCall('always-the-same') }).run()).rejects.toThrow(/call\(\) made the same effect for two threads/)
    await expect(promiseOf({ ...undeduplicated, call: (thread) => ({ ...twilioCall(thread), target: 'text' }) }).run()).rejects.toThrow(/call\(\) made an effect for target "text"; the kit tests target sms/)
  })

  it('a table with a key interlock.toml does not have: the key path in the message', async () => {
    const table = (t: TwilioEmulator) => ({ ...declaredTable(twilioToml(t.url, t), 'sms'), timeout: 3000 })
    await expect(promiseOf({ ...undeduplicated, table }).run()).rejects.toThrow(/\[targets\.sms\] is invalid: 1 problem:\n {2}- targets\.sms.*timeout/)
  })

  it('a crash point the kit does not have', () => {
    expect(() => crashPoints({ ...undeduplicated, points: ['after-held' as 'after-apply'] })).toThrow(/unknown point "after-held"/)
  })
})
