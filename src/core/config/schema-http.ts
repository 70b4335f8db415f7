/**
 * JSON Schema of an http target's request templates, part of schema.ts's
 * http target: the service's own request shape, at the target's level (the
 * default for every action) and per action under
 * [targets.<name>.actions.<action>]. What the schema cannot say (a body
 * that is not JSON, a placeholder naming an undeclared argument, a pointer
 * that does not parse, two bodies at once) is checked right after it, at
 * load, with the same key paths (targets/http/templates.ts).
 *
 * Templates name what they take in braces: `{effect_id}`, `{action}`, or
 * `{args.PATH}` for one of the call's arguments (`{args.to}`,
 * `{args.customer.id}`).
 */
import { DURATION_MAX_MS } from './schema-common.js'

const httpUrl = (description: string) =>
  ({
    type: 'string',
    pattern: '^(https?://|\\$\\{)',
    patternErrorMessage: 'must be an http:// or https:// URL, or start with a ${VAR} reference',
    description,
  }) as const

const pointer = (description: string) =>
  ({
    type: 'string',
    pattern: '^(/|$)',
    patternErrorMessage: 'must be a JSON pointer (RFC 6901): "" or starting with "/", e.g. "/id" or "/data/issueCreate/issue/id"',
    description,
  }) as const

const statuses = (description: string) =>
  ({
    type: 'array',
    description,
    items: {
      type: ['integer', 'string'],
      minimum: 100,
      maximum: 599,
      pattern: '^[1-5]xx$',
      patternErrorMessage: 'must be a status (201) or a class of them ("4xx")',
      description: 'A status, e.g. 201, or a class, e.g. "4xx".',
    },
  }) as const

const stringTable = (description: string, value: string) =>
  ({ type: 'object', description, additionalProperties: { type: 'string', description: value } }) as const

const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"

/** The request's parts, at every level that sends one (apply, query, a premise read). */
const requestKeys = {
  url: httpUrl('Where the request goes; {effect_id}, {action} and {args.PATH} are substituted, each percent-encoded as one path segment or query value. An action\'s own url wins over the target\'s.'),
  params: stringTable(
    'Query parameters appended to the URL, e.g. { jql = "labels = interlock-{effect_id}" }: each value a template, percent-encoded.',
    'Parameter value (a template).',
  ),
  headers: stringTable(
    'Request headers, e.g. Authorization = "Bearer ${API_TOKEN}"; an action\'s headers are added to the target\'s (same name: the action\'s). Values are secrets: kept out of errors, receipts and `interlock check`.',
    'Header value.',
  ),
  body: {
    type: ['string', 'object'],
    description:
      'The request body as JSON, with placeholders: JSON text (\'{"charge_id": "{args.charge_id}", "amount": "{args.amount}"}\') or a TOML table. A string that is exactly one placeholder takes the argument as it is (a number stays a number); inside longer text it is written as text. Sent as application/json. Give one of body, form or graphql; with none, apply sends Interlock\'s envelope {"action","args","effect_id"}.',
  },
  form: {
    type: 'object',
    description: 'The request body as application/x-www-form-urlencoded fields, e.g. { To = "{args.to}", Body = "{args.body}" }; a list repeats the field.',
    additionalProperties: {
      type: ['string', 'array'],
      items: { type: 'string', description: 'One value of a repeated field (a template).' },
      description: 'Field value (a template), or a list of them.',
    },
  },
  graphql: {
    type: 'object',
    additionalProperties: false,
    required: ['query'],
    description: 'The request body as a GraphQL operation, sent as application/json {"query","variables"}: the document as written, values only through variables.',
    properties: {
      query: { type: 'string', minLength: 1, description: 'The GraphQL document, e.g. "mutation($input: IssueCreateInput!) { issueCreate(input: $input) { issue { id } } }". Not templated: pass values as variables.' },
      variables: { type: 'object', description: 'Its variables, with placeholders, e.g. { input = { title = "{args.title}" } }.' },
      operation_name: { type: 'string', minLength: 1, description: 'operationName, for a document with several operations.' },
    },
  },
} as const

/** One of body, form and graphql: two would leave it unclear what is sent. */
export const oneBody = [
  { if: { required: ['body'] }, then: { properties: { form: false, graphql: false } } },
  { if: { required: ['form'] }, then: { properties: { graphql: false } } },
] as const

/** How an answer is judged. */
const answerKeys = {
  committed: statuses('Statuses that mean it happened (COMMITTED). Default: any 2xx.'),
  failed: statuses('Statuses that mean it definitely did not happen and will not (FAILED, with the service\'s message). Default: 4xx other than 409 (tier 1), 412 and 429.'),
  retry_later: statuses('Statuses that mean "not now, nothing done": waited for as long as Retry-After says, then sent again. Default: 429; 409 at tier 1; 403 with Retry-After.'),
  unknown: statuses('Statuses after which it cannot be known whether it happened: sent again with the same effect id (tier 1), asked (tier 2), AMBIGUOUS (tier 3). Default: 5xx and anything not listed.'),
  receipt: pointer('JSON pointer into a COMMITTED answer\'s body whose value the receipt keeps as `id`, e.g. "/sid" (the created object\'s id). An answer judged COMMITTED without a value there is an unknown outcome.'),
  error: pointer('JSON pointer: an answer judged COMMITTED that has a value here is FAILED, with that value as the reason, e.g. "/errors/0/message" (a GraphQL error). Default with graphql: "/errors/0/message".'),
} as const

const query = {
  type: 'object',
  additionalProperties: false,
  allOf: oneBody,
  description:
    'Tier 2: the request that asks whether an effect already happened (after a crash, or an answer that left it unknown), and what "found" means. Its templates must name {effect_id} or an argument, so that it finds this effect and no other. Key by key, an action\'s query wins over the target\'s.',
  properties: {
    method: { enum: ['GET', 'POST'], description: 'HTTP method of the query. Default "GET"; "POST" for a search or GraphQL API.' },
    ...requestKeys,
    found: pointer('JSON pointer into a 2xx answer: the effect happened when there is a value there (not null), e.g. "/issues/0/key" or "/data/issues/nodes/0/id". Without it, a status in found_status means found.'),
    found_equals: {
      type: 'string',
      minLength: 1,
      description: 'With `found`: the value there must equal this template (a list must contain it), e.g. "interlock-{effect_id}".',
    },
    found_status: statuses('Without `found`: statuses that mean the effect happened. Default: any 2xx.'),
    not_found_status: statuses('Statuses that mean it did not happen. Default: [404].'),
    receipt: pointer('JSON pointer into a found answer whose value the receipt keeps as `id`.'),
    settle_ms: {
      type: 'integer',
      minimum: 0,
      maximum: DURATION_MAX_MS,
      description:
        'How long a write may take to show in the query\'s answers (a search index), in milliseconds: an answer "not found" sooner than this after the effect was sent is not believed, and the effect is asked again later instead of being sent again. Default 0.',
    },
  },
} as const

const read = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  description: 'One premise: a GET read when the agent decides and again right before the request is sent; a change in what matters makes the effect REJECTED, with nothing sent.',
  properties: {
    url: requestKeys.url,
    params: requestKeys.params,
    headers: requestKeys.headers,
    pointers: {
      type: 'array',
      items: pointer('One value that matters, e.g. "/status".'),
      description:
        'JSON pointers of the values that matter, e.g. ["/status", "/amount"]: only a change there is a violation (an `updated_at` that changes on every read is not). Default: the whole body.',
    },
  },
} as const

/** Keys a [targets.<name>] table and each of its actions share. */
export const httpTemplateKeys = {
  ...answerKeys,
  params: requestKeys.params,
  body: requestKeys.body,
  form: requestKeys.form,
  graphql: requestKeys.graphql,
  effect_id_header: {
    type: 'string',
    pattern: HEADER_NAME,
    patternErrorMessage: 'must be an HTTP header name, e.g. "Idempotency-Key" or "I-Twilio-Idempotency-Token"',
    description:
      'Header the effect id is sent in, under the name the service reads it by, e.g. "Idempotency-Key" or "I-Twilio-Idempotency-Token". Default "Idempotency-Key" at tier 1, none at tiers 2 and 3. To carry it in the body instead, write {effect_id} in the body template.',
  },
  query,
  rests_on: {
    type: 'array',
    items: read,
    description: 'Premises: templated GETs, e.g. [{ url = "https://api.example.com/charges/{args.charge_id}", pointers = ["/status", "/amount"] }]. Replaces premise_url.',
  },
} as const

const ACTION_NAME = '^[A-Za-z0-9][A-Za-z0-9._:@/_-]{0,199}$'

const action = {
  type: 'object',
  additionalProperties: false,
  allOf: oneBody,
  description: 'One action: what its request looks like and how its answer is judged. Keys not given here are the target\'s.',
  properties: {
    tier: { enum: [1, 2, 3], description: 'This action\'s tier. Default: the target\'s. Tier 2 needs a query (the action\'s or the target\'s).' },
    args: {
      type: 'array',
      items: { type: 'string', pattern: '^[A-Za-z0-9_-]+$', patternErrorMessage: 'must be an argument name', description: 'An argument name.' },
      description:
        'The arguments the action takes, e.g. ["to", "body"]. Templates may name no other (checked at load), a call carrying another is refused at submit, and each must be used by a template, so nothing the agent passes is silently left out.',
    },
    method: { enum: ['POST', 'PUT', 'PATCH', 'DELETE'], description: 'HTTP method of the apply request. Default: the target\'s.' },
    url: requestKeys.url,
    headers: requestKeys.headers,
    ...httpTemplateKeys,
  },
} as const

export const httpActions = {
  type: 'object',
  description:
    'Actions declared by name, as [targets.<name>.actions.<action>] tables, each with its own request; when present, any other action is refused at submit.',
  propertyNames: { pattern: ACTION_NAME, patternErrorMessage: 'action names are 1 to 200 letters, digits and ._:@/-, starting with a letter or digit' },
  additionalProperties: action,
} as const
