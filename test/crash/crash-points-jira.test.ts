/**
 * Jira Cloud's create issue declared only in interlock.toml, which takes no
 * idempotency key: tier 2 by a JQL search for the label the body carries,
 * the search lagging behind writes as Atlassian documents (settle_ms),
 * through every crash point, with faults, on both stores: declared-points.ts.
 * Judged by the emulator's issues per label.
 */
import { JiraEmulator } from '../emulators/jira.js'
import { jiraCall, jiraToml } from '../helpers/declared-apis.js'
import { declaredCrashPoints } from './declared-points.js'

/** Short for the test's sake; settle_ms must cover it. */
const LAG_MS = 250
const SETTLE_MS = 600

declaredCrashPoints({
  name: 'jira',
  start: async () => {
    const jira = await new JiraEmulator().start()
    jira.searchLagMs = LAG_MS
    return jira
  },
  declared: (jira) => jiraToml(jira.url, jira.basicAuth, SETTLE_MS),
  tier: 2,
  call: (thread) => jiraCall(thread),
  applications: (jira, id) => jira.issuesFor(id).length,
  // Tries spread over the settle time: "not found" is believed only after it.
  retry: { maxAttempts: 8, backoffMs: 100 },
})
