/**
 * Linear's GraphQL API, as far as an http target declared for it in
 * interlock.toml relies on it, from Linear's own documentation and SDK:
 *
 * - One endpoint, POST https://api.linear.app/graphql, a JSON body
 *   {query, variables}; a personal API key in `Authorization: <key>`, an
 *   OAuth token as `Authorization: Bearer <token>`
 *   (https://linear.app/developers/graphql).
 * - `issueCreate(input: IssueCreateInput!)` answers an IssuePayload
 *   {success, issue {id, identifier, title, description, url}}; `teamId` is
 *   the one required field of the input (https://linear.app/developers/graphql,
 *   "Mutations"; the IssueCreateInput of the SDK's schema,
 *   github.com/linear/linear packages/sdk/src/schema.graphql).
 * - `issues(filter: IssueFilter, first: Int)` answers a connection {nodes};
 *   string fields filter with the comparators eq, neq, in, nin, contains,
 *   notContains, containsIgnoreCase, startsWith, endsWith
 *   (https://linear.app/developers/filtering). It reads the issues
 *   themselves, so an issue is found as soon as issueCreate answered.
 * - Errors: a GraphQL `errors` list, each with `extensions.type` ("invalid
 *   input", "authentication error", "ratelimited", ...) and
 *   `extensions.userPresentableMessage`, which the SDK prefers for its
 *   message; HTTP 429 or an error of type "ratelimited" is a rate limit, with
 *   Retry-After (github.com/linear/linear packages/sdk/src/error.ts,
 *   parseLinearError and RatelimitedLinearError). A request whose variables
 *   fail validation is answered 400; a field that fails while executing is
 *   answered 200 with `data` null there and the error listed (GraphQL
 *   spec, "Response": request errors vs. field errors).
 *
 * The selection set is not checked against Linear's schema: whole objects
 * are answered. The ledger counts issues per effect id, read from the marker
 * `interlock-effect <id>` the declared mutation writes into the description.
 */
import { randomUUID } from 'node:crypto'
import { Emulator, type EmulatorRequest, type EmulatorResponse } from './emulator.js'
import { parseOperation, type GqlValue, type RootField } from './graphql-document.js'

export interface LinearIssue {
  id: string
  identifier: string
  number: number
  title: string
  description: string | null
  url: string
  teamId: string
  createdAt: string
}

const MARKER = /interlock-effect ([0-9a-f]{64})/

export class LinearEmulator extends Emulator {
  readonly issues: LinearIssue[] = []
  readonly teams = new Map<string, { key: string }>()
  private ratelimited = 0

  constructor(readonly apiKey = 'lin_api_emulator_5f4e3d2c1b0a99887766') {
    super()
    this.teams.set('9cfb482a-81e3-4154-b5b9-2c805e70a02d', { key: 'ENG' })
  }

  get teamId(): string {
    return [...this.teams.keys()][0]!
  }

  /** The next request is over Linear's rate limit: 429, type "ratelimited", Retry-After. */
  rateLimitNext(times = 1): void {
    this.ratelimited += times
  }

  issuesFor(effectId: string): LinearIssue[] {
    return this.issues.filter((i) => MARKER.exec(i.description ?? '')?.[1] === effectId)
  }

  protected override injectedError(_req: EmulatorRequest, status: number): EmulatorResponse {
    return { status, body: { errors: [{ message: 'Internal server error', extensions: { type: 'internal error', userPresentableMessage: 'Something went wrong.' } }] } }
  }

  protected async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    if (req.path !== '/graphql') return { status: 404, body: 'Not Found' }
    if (req.method !== 'POST') return { status: 405, body: { errors: [{ message: 'Method not allowed' }] } }
    const auth = String(req.headers.authorization ?? '')
    if (auth !== this.apiKey && auth !== `Bearer ${this.apiKey}`) {
      return failure(400, 'authentication error', 'Authentication required, not authenticated', 'You need to authenticate to access this operation.')
    }
    if (this.ratelimited > 0) {
      this.ratelimited--
      return { ...failure(429, 'ratelimited', 'Rate limit exceeded', 'Too many requests: try again in a moment.'), headers: { 'retry-after': '1' } }
    }
    let doc: { query?: unknown; variables?: unknown }
    try {
      doc = JSON.parse(req.body) as typeof doc
    } catch {
      return failure(400, 'graphql error', 'Body is not valid JSON', 'Bad request')
    }
    if (typeof doc.query !== 'string') return failure(400, 'graphql error', 'Must provide query string.', 'Bad request')
    let op
    try {
      op = parseOperation(doc.query, (doc.variables ?? {}) as Record<string, unknown>)
    } catch (e) {
      return failure(400, 'graphql error', (e as Error).message, 'Bad request')
    }
    const data: Record<string, unknown> = {}
    const errors: unknown[] = []
    for (const field of op.fields) {
      if (op.kind === 'mutation' && field.name === 'issueCreate') {
        const input = field.args.input
        if (!isObject(input) || typeof input.teamId !== 'string') {
          return failure(400, 'invalid input', 'Argument Validation Error', 'teamId must be given.', ['issueCreate'])
        }
        if (!this.teams.has(input.teamId)) {
          data[field.key] = null
          errors.push(error('invalid input', 'Entity not found: Team', 'Could not find referenced Team.', [field.key]))
          continue
        }
        data[field.key] = await this.apply(req, MARKER.exec(String(input.description ?? ''))?.[1], () => this.create(input))
      } else if (op.kind === 'query' && field.name === 'issues') {
        data[field.key] = this.find(field)
      } else {
        return failure(400, 'graphql error', `Cannot query field "${field.name}" on type "${op.kind === 'mutation' ? 'Mutation' : 'Query'}".`, 'Bad request')
      }
    }
    return { status: 200, body: errors.length > 0 ? { data, errors } : { data } }
  }

  private create(input: { [k: string]: GqlValue }): { success: true; issue: LinearIssue } {
    const team = this.teams.get(input.teamId as string)!
    const number = this.issues.filter((i) => i.teamId === input.teamId).length + 1
    const issue: LinearIssue = {
      id: randomUUID(),
      identifier: `${team.key}-${number}`,
      number,
      title: typeof input.title === 'string' ? input.title : '',
      description: typeof input.description === 'string' ? input.description : null,
      url: `https://linear.app/emulator/issue/${team.key}-${number}`,
      teamId: input.teamId as string,
      createdAt: new Date().toISOString(),
    }
    this.issues.push(issue)
    return { success: true, issue }
  }

  private find(field: RootField): { nodes: LinearIssue[] } {
    const filter = isObject(field.args.filter) ? field.args.filter : {}
    const first = typeof field.args.first === 'number' ? field.args.first : 50
    const nodes = this.issues.filter((i) => matches(i, filter)).reverse().slice(0, first)
    return { nodes }
  }
}

function matches(issue: LinearIssue, filter: { [k: string]: GqlValue }): boolean {
  return Object.entries(filter).every(([field, cmp]) => {
    if (field === 'team' && isObject(cmp) && isObject(cmp.id)) return compare(issue.teamId, cmp.id)
    if ((field === 'title' || field === 'description' || field === 'identifier') && isObject(cmp)) return compare(issue[field], cmp)
    return false
  })
}

function compare(v: string | null, cmp: { [k: string]: GqlValue }): boolean {
  return Object.entries(cmp).every(([op, want]) => {
    const s = v ?? ''
    switch (op) {
      case 'eq':
        return v === want
      case 'neq':
        return v !== want
      case 'in':
        return Array.isArray(want) && want.includes(s)
      case 'nin':
        return Array.isArray(want) && !want.includes(s)
      case 'contains':
        return typeof want === 'string' && s.includes(want)
      case 'notContains':
        return typeof want === 'string' && !s.includes(want)
      case 'containsIgnoreCase':
        return typeof want === 'string' && s.toLowerCase().includes(want.toLowerCase())
      case 'startsWith':
        return typeof want === 'string' && s.startsWith(want)
      case 'endsWith':
        return typeof want === 'string' && s.endsWith(want)
      default:
        return false
    }
  })
}

function isObject(v: GqlValue | undefined): v is { [k: string]: GqlValue } {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

function error(type: string, message: string, userPresentableMessage: string, path?: string[]) {
  return { message, ...(path ? { path } : {}), extensions: { type, userError: type === 'invalid input', userPresentableMessage } }
}

function failure(status: number, type: string, message: string, userPresentableMessage: string, path?: string[]): EmulatorResponse {
  return { status, body: { errors: [error(type, message, userPresentableMessage, path)] } }
}
