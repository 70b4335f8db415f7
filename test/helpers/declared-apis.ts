/**
 * Three published APIs declared only in interlock.toml, as a user would
 * write them, each against its emulator (src/emulators): the text of the
 * file and the environment its `${VAR}`s come from. The integration tests,
 * the crash-point tests and the `check` e2e test read the same files.
 */
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { parse } from 'smol-toml'
import type { EffectInput, Tier } from '../../src/core/effect.js'

/** GitHub's published REST description (OpenAPI 3.0, 12 MB), as @octokit/openapi ships it: what `targets from-openapi` is tried on. */
export const GITHUB_OPENAPI = join(dirname(createRequire(import.meta.url).resolve('@octokit/openapi/package.json')), 'generated', 'api.github.com.json')

export interface DeclaredApi {
  /** The interlock.toml text, for the emulator at `url`. */
  toml: string
  /** Its `${VAR}`s. */
  env: Record<string, string>
}

/** The `[targets.<name>]` table of a declared API, as the contract kit (agent-interlock/testing) takes it. */
export function declaredTable(api: DeclaredApi, name: string): Record<string, unknown> {
  const table = (parse(api.toml).targets as Record<string, Record<string, unknown>> | undefined)?.[name]
  if (!table) throw new Error(`no [targets.${name}] in the declared API`)
  return table
}

/**
 * Twilio Messages, tier 1: form-encoded POST .../Messages.json, the effect
 * id in I-Twilio-Idempotency-Token, 201 COMMITTED with the message's sid,
 * 4xx definite failures, 429 "not now" (src/emulators/twilio.ts cites the pages).
 */
export function twilioToml(url: string, auth: { accountSid: string; basicAuth: string }, extra = ''): DeclaredApi {
  return {
    toml: `[targets.sms]
type = "http"
tier = 1
url = "${url}/2010-04-01/Accounts/\${TWILIO_ACCOUNT_SID}/Messages.json"
headers = { Authorization = "\${TWILIO_BASIC_AUTH}" }
effect_id_header = "I-Twilio-Idempotency-Token"
timeout_ms = 3000

[targets.sms.actions.send_sms]
args = ["to", "body"]
form = { To = "{args.to}", From = "\${TWILIO_FROM}", Body = "{args.body}" }
committed = [201]
failed = ["4xx"]
retry_later = [429]
receipt = "/sid"
${extra}`,
    env: { TWILIO_ACCOUNT_SID: auth.accountSid, TWILIO_BASIC_AUTH: auth.basicAuth, TWILIO_FROM: '+15005550006' },
  }
}

export function twilioCall(thread: string, to = '+15558675310'): EffectInput {
  return { thread, target: 'sms', action: 'send_sms', args: { to, body: `Your order ${thread} has shipped.` } }
}

/** What a crash-point run needs to know of one declared API. */
export interface CrashApi {
  tier: Tier
  call(thread: string): EffectInput
}

/**
 * Linear's issueCreate, tier 2: a GraphQL mutation whose description carries
 * the marker `interlock-effect <id>`, and the query a GraphQL search for that
 * marker (issues filtered by description); 4xx definite failures (invalid
 * input, authentication), a GraphQL error in a 200 FAILED by the default
 * error pointer, 429 "not now" (src/emulators/linear.ts cites the pages).
 */
export function linearToml(url: string, extra = ''): DeclaredApi {
  return {
    toml: `[targets.linear]
type = "http"
tier = 2
url = "${url}/graphql"
headers = { Authorization = "\${LINEAR_API_KEY}" }
timeout_ms = 3000

[targets.linear.actions.create_issue]
args = ["team_id", "title", "description"]
receipt = "/data/issueCreate/issue/id"
failed = ["4xx"]
retry_later = [429]

[targets.linear.actions.create_issue.graphql]
query = '''
mutation CreateIssue($input: IssueCreateInput!) {
  issueCreate(input: $input) { success issue { id identifier url } }
}'''
variables = { input = { teamId = "{args.team_id}", title = "{args.title}", description = "{args.description}\\n\\ninterlock-effect {effect_id}" } }

[targets.linear.actions.create_issue.query]
method = "POST"
found = "/data/issues/nodes/0/id"
receipt = "/data/issues/nodes/0/id"

[targets.linear.actions.create_issue.query.graphql]
query = '''
query FindByMarker($marker: String!) {
  issues(filter: { description: { contains: $marker } }, first: 1) { nodes { id identifier } }
}'''
variables = { marker = "interlock-effect {effect_id}" }
${extra}`,
    env: { LINEAR_API_KEY: 'lin_api_emulator_5f4e3d2c1b0a99887766' },
  }
}

export function linearCall(thread: string, teamId: string): EffectInput {
  return { thread, target: 'linear', action: 'create_issue', args: { team_id: teamId, title: `Checkout fails for ${thread}`, description: 'Customers see a 500 at the last step.' } }
}

/**
 * Jira Cloud's create issue (POST /rest/api/3/issue), which takes no
 * idempotency key: the body carries the label `interlock-<id>`. Action
 * `create_issue` is tier 2, asked by a JQL search for that label, whose
 * answers lag behind writes (settle_ms); `create_issue_untracked` declares
 * no query and is tier 3 (src/emulators/jira.ts cites the pages).
 * `settleMs` null leaves settle_ms out: what that costs is shown in
 * the Jira tests.
 */
export function jiraToml(url: string, basicAuth: string, settleMs: number | null = 1500, extra = ''): DeclaredApi {
  return {
    toml: `[targets.jira]
type = "http"
tier = 2
url = "${url}/rest/api/3/issue"
headers = { Authorization = "\${JIRA_BASIC_AUTH}" }
timeout_ms = 3000
receipt = "/key"
failed = ["4xx"]
retry_later = [429]

[targets.jira.body.fields]
project = { key = "{args.project}" }
issuetype = { name = "Task" }
summary = "{args.summary}"
labels = ["interlock-{effect_id}"]
description = { type = "doc", version = 1, content = [{ type = "paragraph", content = [{ type = "text", text = "{args.description}" }] }] }

[targets.jira.actions.create_issue]
args = ["project", "summary", "description"]

[targets.jira.actions.create_issue.query]
url = "${url}/rest/api/3/search/jql"
params = { jql = "labels = interlock-{effect_id}", fields = "key,labels", maxResults = "1" }
found = "/issues/0/key"
receipt = "/issues/0/key"
${settleMs === null ? '' : `settle_ms = ${settleMs}`}

[targets.jira.actions.create_issue_untracked]
tier = 3
args = ["project", "summary", "description"]
${extra}`,
    env: { JIRA_BASIC_AUTH: basicAuth },
  }
}

export function jiraCall(thread: string, action: 'create_issue' | 'create_issue_untracked' = 'create_issue'): EffectInput {
  return { thread, target: 'jira', action, args: { project: 'OPS', summary: `Refund stuck for ${thread}`, description: 'The refund has been pending for three days.' } }
}
