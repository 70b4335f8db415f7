/**
 * Jira Cloud's create issue declared only in interlock.toml with no query:
 * tier 3, through every crash point, with faults, on both stores
 * (declared-points.ts): a crash or a lost answer in flight is AMBIGUOUS,
 * never sent again. Judged by the emulator's issues per label.
 */
import { JiraEmulator } from '../emulators/jira.js'
import { jiraCall, jiraToml } from '../helpers/declared-apis.js'
import { declaredCrashPoints } from './declared-points.js'

declaredCrashPoints({
  name: 'jira-untracked',
  start: () => new JiraEmulator().start(),
  declared: (jira) => jiraToml(jira.url, jira.basicAuth),
  tier: 3,
  call: (thread) => jiraCall(thread, 'create_issue_untracked'),
  applications: (jira, id) => jira.issuesFor(id).length,
})
