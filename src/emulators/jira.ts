/**
 * Jira Cloud's REST API v3, as far as an http target declared for it in
 * interlock.toml relies on it, from Atlassian's documentation:
 *
 * - Create issue, POST /rest/api/3/issue
 *   (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/#api-rest-api-3-issue-post):
 *   a JSON body {fields: {project: {key|id}, issuetype: {name|id}, summary,
 *   description (an Atlassian Document Format doc), labels, ...}}; answered
 *   201 with the CreatedIssue {id, key, self}; a refused field is 400 with
 *   {errorMessages: [], errors: {<field>: <why>}} (e.g. "You must specify a
 *   summary of the issue."; labels cannot contain spaces); 401 without valid
 *   credentials (Basic: an Atlassian account's email and an API token). The
 *   endpoint takes no idempotency key: a request sent twice makes two issues.
 * - Search for issues using JQL (enhanced search), GET or POST
 *   /rest/api/3/search/jql
 *   (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-search/#api-rest-api-3-search-jql-get):
 *   `jql`, `fields`, `maxResults`, `nextPageToken`; answered {issues: [{id,
 *   key, self, fields}], isLast}. It is eventually consistent: "The API
 *   doesn't provide read-after-write consistency by default ... subsequent
 *   search operations ... may return stale or outdated data ... The delay
 *   might vary from a few seconds to minutes"; only the issues named in
 *   `reconcileIssues` (POST, up to 50 ids) are read as they are now
 *   (https://developer.atlassian.com/cloud/jira/platform/search-and-reconcile).
 *   Here an issue shows in search `searchLagMs` after it was created.
 *   The JQL understood: clauses joined by AND, `field = value`, `field in
 *   (a, b)` for project, key, labels, issuetype, and `summary ~ "text"`.
 * - Get issue, GET /rest/api/3/issue/{idOrKey}: the issue, or 404
 *   {errorMessages: ["Issue does not exist or you do not have permission to see it."]}.
 * - Rate limiting: a 429 with Retry-After, in seconds
 *   (https://developer.atlassian.com/cloud/jira/platform/rate-limiting/).
 *
 * The ledger counts issues per effect id, read from the label
 * `interlock-<id>` the declared body writes.
 */
import { Emulator, type EmulatorRequest, type EmulatorResponse } from './emulator.js'

export interface JiraIssue {
  id: string
  key: string
  self: string
  fields: {
    project: { key: string }
    issuetype: { name: string }
    summary: string
    description: unknown
    labels: string[]
    created: string
  }
  /** When it was made, by the emulator's clock: search shows it searchLagMs later. */
  createdAt: number
}

const LABEL = /^interlock-([0-9a-f]{64})$/

export class JiraEmulator extends Emulator {
  readonly issues: JiraIssue[] = []
  readonly projects = new Set(['OPS'])
  /** How long after its creation an issue shows in JQL search (the docs: seconds to minutes). */
  searchLagMs = 2_000
  clock: () => number = Date.now
  private limited = 0
  private seq = 10_000

  constructor(
    readonly email = 'agent@example.com',
    readonly apiToken = 'ATATT3xFfGF0emulator_jira_token_77a1',
  ) {
    super()
  }

  get basicAuth(): string {
    return `Basic ${Buffer.from(`${this.email}:${this.apiToken}`).toString('base64')}`
  }

  /** The next request is rate limited: 429, Retry-After: 1. */
  rateLimitNext(times = 1): void {
    this.limited += times
  }

  issuesFor(effectId: string): JiraIssue[] {
    return this.issues.filter((i) => i.fields.labels.some((l) => LABEL.exec(l)?.[1] === effectId))
  }

  protected override injectedError(_req: EmulatorRequest, status: number): EmulatorResponse {
    return { status, body: { errorMessages: ['Internal server error'], errors: {} } }
  }

  protected async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    if (req.headers.authorization !== this.basicAuth) {
      return { status: 401, body: { errorMessages: ['You are not authenticated. Authentication required to perform this operation.'], errors: {} } }
    }
    if (this.limited > 0) {
      this.limited--
      return { status: 429, body: { errorMessages: ['Rate limit exceeded.'], errors: {} }, headers: { 'retry-after': '1' } }
    }
    if (req.path === '/rest/api/3/issue' && req.method === 'POST') return this.create(req)
    if (req.path === '/rest/api/3/search/jql' && req.method === 'GET') {
      return this.search(req.query.get('jql') ?? '', Number(req.query.get('maxResults') ?? 50), [])
    }
    if (req.path === '/rest/api/3/search/jql' && req.method === 'POST') {
      let body: { jql?: string; maxResults?: number; reconcileIssues?: number[] }
      try {
        body = JSON.parse(req.body) as typeof body
      } catch {
        return badRequest(['Invalid request payload. Refer to the REST API documentation and try again.'])
      }
      return this.search(body.jql ?? '', body.maxResults ?? 50, body.reconcileIssues ?? [])
    }
    const one = /^\/rest\/api\/3\/issue\/([^/]+)$/.exec(req.path)
    if (one && req.method === 'GET') {
      const ref = decodeURIComponent(one[1]!)
      const issue = this.issues.find((i) => i.id === ref || i.key === ref)
      return issue ? { status: 200, body: view(issue) } : { status: 404, body: { errorMessages: ['Issue does not exist or you do not have permission to see it.'], errors: {} } }
    }
    return { status: 404, body: { errorMessages: ['Not Found'], errors: {} } }
  }

  private async create(req: EmulatorRequest): Promise<EmulatorResponse> {
    let body: { fields?: Record<string, unknown> }
    try {
      body = JSON.parse(req.body) as typeof body
    } catch {
      return badRequest(['Invalid request payload. Refer to the REST API documentation and try again.'])
    }
    const f = body.fields ?? {}
    const errors: Record<string, string> = {}
    const project = (f.project as { key?: unknown } | undefined)?.key
    if (typeof project !== 'string' || !this.projects.has(project)) errors.project = 'valid project is required'
    const issuetype = (f.issuetype as { name?: unknown } | undefined)?.name
    if (typeof issuetype !== 'string') errors.issuetype = 'Specify an issue type'
    if (typeof f.summary !== 'string' || f.summary.trim() === '') errors.summary = 'You must specify a summary of the issue.'
    const labels = f.labels === undefined ? [] : f.labels
    if (!Array.isArray(labels) || labels.some((l) => typeof l !== 'string' || /\s/.test(l))) errors.labels = 'The label must not contain spaces.'
    if (Object.keys(errors).length > 0) return badRequest([], errors)
    const effectId = (labels as string[]).map((l) => LABEL.exec(l)?.[1]).find((x) => x !== undefined)
    return this.apply(req, effectId, () => {
      const id = String(++this.seq)
      const issue: JiraIssue = {
        id,
        key: `${project as string}-${this.issues.filter((i) => i.fields.project.key === project).length + 1}`,
        self: `${this.url}/rest/api/3/issue/${id}`,
        fields: { project: { key: project as string }, issuetype: { name: issuetype as string }, summary: f.summary as string, description: f.description ?? null, labels: labels as string[], created: new Date(this.clock()).toISOString() },
        createdAt: this.clock(),
      }
      this.issues.push(issue)
      return { status: 201, body: { id: issue.id, key: issue.key, self: issue.self } }
    })
  }

  private search(jql: string, maxResults: number, reconcile: number[]): EmulatorResponse {
    let clauses: Clause[]
    try {
      clauses = parseJql(jql)
    } catch (e) {
      return badRequest([(e as Error).message])
    }
    const now = this.clock()
    const visible = this.issues.filter((i) => now - i.createdAt >= this.searchLagMs || reconcile.includes(Number(i.id)))
    const found = visible.filter((i) => clauses.every((c) => c(i))).reverse().slice(0, Math.max(0, Math.min(maxResults, 5000)))
    return { status: 200, body: { issues: found.map(view), isLast: true } }
  }
}

type Clause = (issue: JiraIssue) => boolean

const FIELDS = ['project', 'key', 'issuekey', 'labels', 'issuetype', 'summary']

/** `a = b AND c in (d, e) AND summary ~ "text"`: enough JQL for a query that finds a label. */
function parseJql(jql: string): Clause[] {
  if (jql.trim() === '') return []
  return jql.split(/\s+AND\s+/i).map((part) => {
    const m = /^\s*(\w+)\s*(=|~|in)\s*(.+?)\s*$/i.exec(part)
    if (!m) throw new Error(`Error in the JQL Query: cannot read '${part.trim()}'.`)
    const field = m[1]!.toLowerCase()
    if (!FIELDS.includes(field)) throw new Error(`Error in the JQL Query: Field '${m[1]}' does not exist or you do not have permission to view it.`)
    const op = m[2]!.toLowerCase()
    const values = op === 'in' ? list(m[3]!) : [unquote(m[3]!)]
    const of = (i: JiraIssue): string[] => {
      switch (field) {
        case 'project':
          return [i.fields.project.key]
        case 'key':
        case 'issuekey':
          return [i.key]
        case 'labels':
          return i.fields.labels
        case 'issuetype':
          return [i.fields.issuetype.name]
        case 'summary':
          return [i.fields.summary]
        default:
          return [i.fields.summary]
      }
    }
    if (op === '~') return (i) => of(i).some((v) => v.toLowerCase().includes(values[0]!.toLowerCase()))
    return (i) => of(i).some((v) => values.includes(v))
  })
}

function list(text: string): string[] {
  const inner = /^\((.*)\)$/.exec(text.trim())
  if (!inner) throw new Error(`Error in the JQL Query: expected a list in parentheses, found '${text}'.`)
  return inner[1]!.split(',').map(unquote)
}

function unquote(v: string): string {
  const t = v.trim()
  return /^"(.*)"$/.test(t) || /^'(.*)'$/.test(t) ? t.slice(1, -1) : t
}

function view(i: JiraIssue) {
  return { id: i.id, key: i.key, self: i.self, fields: i.fields }
}

function badRequest(errorMessages: string[], errors: Record<string, string> = {}): EmulatorResponse {
  return { status: 400, body: { errorMessages, errors } }
}
