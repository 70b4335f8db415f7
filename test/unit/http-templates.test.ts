/**
 * The http target's request templates: checked at load with key paths,
 * filled in from a call (the service's own body shape, form fields, GraphQL
 * variables, the effect id in the header the service reads), a call lacking
 * what a template needs refused at submit naming the argument, and answers
 * judged by the declared rules. No network: the requests are built and
 * compared, the answers are made up.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import type { HttpTargetConfig } from '../../src/core/config/types.js'
import { toEffect } from '../../src/core/effect.js'
import { ConfigError, DispatchFault, InputError } from '../../src/core/errors.js'
import { specFor, specsOf } from '../../src/core/targets/http/actions.js'
import { declaredOutcome, judgeAnswer } from '../../src/core/targets/http/answers.js'
import type { HttpAnswer } from '../../src/core/targets/http/client.js'
import { HttpTarget } from '../../src/core/targets/http/http-target.js'
import { parsePointer, valueAt } from '../../src/core/targets/http/pointer.js'
import { buildRequest } from '../../src/core/targets/http/request.js'

const FILE = '/srv/agent/interlock.toml'
const ID = 'ab'.repeat(32)

function problemsOf(text: string): string[] {
  try {
    parseConfig(text, { file: FILE, env: {} })
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return [...(error as ConfigError).problems]
  }
  throw new Error('expected a ConfigError')
}

function httpOf(text: string): HttpTargetConfig {
  const config = parseConfig(text, { file: FILE, env: { TOKEN: 'sk_live_templated_secret' } })
  const t = Object.values(config.targets)[0]!
  if (t.type !== 'http') throw new Error('not http')
  return t
}

function requestOf(text: string, action: string, args: Record<string, unknown>) {
  const c = httpOf(text)
  const spec = specFor(specsOf('svc', c), action)!
  return buildRequest(spec.request, { effect_id: ID, action, args: args as never }, spec.effectIdHeader)
}

const REFUNDS = `
[targets.payments]
type = "http"
tier = 1
url = "https://payments.example.com/v1/refunds"
headers = { Authorization = "Bearer \${TOKEN}" }

[targets.payments.actions.refund]
args = ["charge_id", "amount_cents"]
body = '{"charge_id": "{args.charge_id}", "amount_cents": "{args.amount_cents}", "reason": "requested_by_customer"}'
receipt = "/refund/id"
`

describe('the service\'s own request shape', () => {
  it('a JSON body from its template: a string that is only a placeholder keeps the argument\'s type; the effect id goes in Idempotency-Key at tier 1', () => {
    const req = requestOf(REFUNDS, 'refund', { charge_id: 'ch_1', amount_cents: 1250 })
    expect(req.method).toBe('POST')
    expect(req.url).toBe('https://payments.example.com/v1/refunds')
    expect(JSON.parse(req.body!)).toEqual({ charge_id: 'ch_1', amount_cents: 1250, reason: 'requested_by_customer' })
    // Canonical JSON: the same bytes on every retry.
    expect(req.body).toBe('{"amount_cents":1250,"charge_id":"ch_1","reason":"requested_by_customer"}')
    expect(req.headers).toMatchObject({ 'content-type': 'application/json', 'idempotency-key': ID, Authorization: 'Bearer sk_live_templated_secret' })
  })

  it('without a template, the envelope as before: {"action","args","effect_id"}, Idempotency-Key at tier 1', () => {
    const req = requestOf(`[targets.svc]\ntype = "http"\ntier = 1\nurl = "https://svc.example.com/do/{action}"\n`, 'refund', { amount: '5.00' })
    expect(req.url).toBe('https://svc.example.com/do/refund')
    expect(req.body).toBe(`{"action":"refund","args":{"amount":"5.00"},"effect_id":"${ID}"}`)
    expect(req.headers).toEqual({ 'content-type': 'application/json', 'idempotency-key': ID })
  })

  it('form fields in the order written, a list repeating the field; path and query parts from the args; the effect id under the header name the service reads', () => {
    const req = requestOf(
      `[targets.sms]
type = "http"
tier = 1
url = "https://api.twilio.example/2010-04-01/Accounts/{args.account}/Messages.json"
effect_id_header = "I-Twilio-Idempotency-Token"
params = { note = "{args.note}" }
form = { To = "{args.to}", From = "+15005550006", Body = "{args.body}", MediaUrl = "{args.media}" }
`,
      'send',
      { account: 'AC 1/2', to: '+15558675310', body: 'Hi & bye', media: ['https://a.example/1.png', 'https://a.example/2.png'], note: 'x y' },
    )
    expect(req.url).toBe('https://api.twilio.example/2010-04-01/Accounts/AC%201%2F2/Messages.json?note=x+y')
    expect(req.body).toBe('To=%2B15558675310&From=%2B15005550006&Body=Hi+%26+bye&MediaUrl=https%3A%2F%2Fa.example%2F1.png&MediaUrl=https%3A%2F%2Fa.example%2F2.png')
    expect(req.headers).toEqual({ 'content-type': 'application/x-www-form-urlencoded', 'i-twilio-idempotency-token': ID })
  })

  it('a GraphQL document as written, values only in variables; dotted argument paths; the effect id as a marker in a field', () => {
    const c = httpOf(`[targets.linear]
type = "http"
tier = 2
url = "https://api.linear.example/graphql"

[targets.linear.actions.create_issue]
graphql = { query = "mutation($input: IssueCreateInput!) { issueCreate(input: $input) { issue { id } } }", variables = { input = { teamId = "{args.team.id}", title = "{args.title}", description = "{args.text}\\n\\ninterlock-effect {effect_id}" } } }
receipt = "/data/issueCreate/issue/id"
query = { method = "POST", graphql = { query = "query($m: String!) { issues(filter: { description: { contains: $m } }) { nodes { id } } }", variables = { m = "interlock-effect {effect_id}" } }, found = "/data/issues/nodes/0/id" }
`)
    const spec = specFor(specsOf('linear', c), 'create_issue')!
    const req = buildRequest(spec.request, { effect_id: ID, action: 'create_issue', args: { team: { id: 'T1' }, title: 'Broken', text: 'It broke' } }, spec.effectIdHeader)
    expect(JSON.parse(req.body!)).toEqual({
      query: 'mutation($input: IssueCreateInput!) { issueCreate(input: $input) { issue { id } } }',
      variables: { input: { teamId: 'T1', title: 'Broken', description: `It broke\n\ninterlock-effect ${ID}` } },
    })
    // Tier 2: no idempotency header unless one is asked for; a GraphQL error in a 200 is a failure.
    expect(req.headers).toEqual({ 'content-type': 'application/json' })
    expect(spec.rules.error).toBe('/errors/0/message')
    expect(spec.query).toMatchObject({ method: 'POST', url: 'https://api.linear.example/graphql', found: '/data/issues/nodes/0/id' })
  })

  it('an action\'s keys over the target\'s: its own url, method and headers; the rest inherited', () => {
    const c = httpOf(`[targets.svc]
type = "http"
tier = 3
url = "https://svc.example.com/items"
headers = { Authorization = "Bearer \${TOKEN}", Accept = "application/json" }
receipt = "/id"
[targets.svc.actions.create]
body = { name = "{args.name}" }
[targets.svc.actions.remove]
method = "DELETE"
url = "https://svc.example.com/items/{args.id}"
headers = { Accept = "*/*" }
`)
    const specs = specsOf('svc', c)
    expect(specFor(specs, 'create')!.request).toMatchObject({ method: 'POST', url: 'https://svc.example.com/items' })
    expect(specFor(specs, 'remove')!.request).toMatchObject({ method: 'DELETE', url: 'https://svc.example.com/items/{args.id}', headers: { Authorization: 'Bearer sk_live_templated_secret', Accept: '*/*' } })
    expect(specFor(specs, 'remove')!.rules.receipt).toBe('/id')
    expect(specFor(specs, 'refund')).toBeUndefined()
  })
})

describe('checked at load, each problem named by its key path', () => {
  it('an argument the action does not declare, one declared but never sent, a misspelt placeholder', () => {
    expect(
      problemsOf(`[targets.payments]
type = "http"
tier = 3
url = "https://payments.example.com/v1/refunds/{charge_id}"
[targets.payments.actions.refund]
args = ["charge_id", "amount_cents", "note"]
body = '{"charge": "{args.charge}", "amount_cents": "{args.amount_cents}"}'
`),
    ).toEqual([
      'targets.payments.url: {charge_id} is not a placeholder; write {args.charge_id}, {effect_id} or {action}',
      'targets.payments.actions.refund.args: {args.charge} (in body) names an argument the action does not declare; add "charge" to args or fix the template',
      'targets.payments.actions.refund.args: "charge_id" is declared but no template sends it: the service would never see it',
      'targets.payments.actions.refund.args: "note" is declared but no template sends it: the service would never see it',
    ])
  })

  it('a body template that is not valid JSON, and pointers that cannot parse', () => {
    const problems = problemsOf(`[targets.svc]
type = "http"
tier = 3
url = "https://svc.example.com/x"
receipt = "/a/~2"
[targets.svc.actions.make]
body = '{"amount": {args.amount}}'
`)
    expect(problems).toHaveLength(2)
    expect(problems[0]).toBe('targets.svc.receipt: "/a/~2" is not a JSON pointer: "~" must be written ~0, and "/" inside a name ~1 (RFC 6901)')
    expect(problems[1]).toMatch(/^targets\.svc\.actions\.make\.body: not valid JSON \(.+\); write placeholders inside strings, e\.g\. "amount": "\{args\.amount\}"/)
    // The schema's own word on a pointer that does not start with "/" (schema problems come first, all of them).
    expect(problemsOf(`[targets.svc]\ntype = "http"\ntier = 3\nurl = "https://svc.example.com/x"\nerror = "errors/0"\n`)).toEqual([
      'targets.svc.error: must be a JSON pointer (RFC 6901): "" or starting with "/", e.g. "/id" or "/data/issueCreate/issue/id"',
    ])
  })

  it('tier 2 without a query, a query on tier 3, premises naming the effect id, a status in two lists', () => {
    expect(
      problemsOf(`[targets.jira]
type = "http"
tier = 2
url = "https://jira.example.com/rest/api/3/issue"
[targets.jira.actions.create]
body = { fields = { summary = "{args.summary}" } }
failed = ["4xx"]
retry_later = [429, "4xx"]
rests_on = [{ url = "https://jira.example.com/rest/api/3/issue/{effect_id}" }]
[targets.jira.actions.note]
tier = 3
form = { a = "b" }
query = { url = "https://jira.example.com/q/{effect_id}" }
`),
    ).toEqual([
      'targets.jira.actions.create.retry_later: "4xx" is also in failed; a status means one outcome',
      'targets.jira.actions.create.rests_on.0.url: cannot use {effect_id}: premises are read before the effect exists',
      'targets.jira.actions.create.query: required when tier = 2 (the gate asks it whether an effect already happened); or declare tier 1 or 3',
      'targets.jira.actions.note.query: only used when tier = 2; remove it, or set tier = 2 if the service can be asked',
    ])
  })

  it('a settle time longer than the gate waits in one pass', () => {
    expect(
      problemsOf(`[gate]\nmax_wait_ms = 1000\n[targets.jira]\ntype = "http"\ntier = 2\nurl = "https://j.example.com/i"\nbody = { labels = ["interlock-{effect_id}"] }\nquery = { url = "https://j.example.com/s", params = { jql = "labels = interlock-{effect_id}" }, found = "/issues/0/key", settle_ms = 5000 }\n`),
    ).toEqual(['targets.jira.query.settle_ms: 5000 is longer than [gate] max_wait_ms (1000), which one pass waits in place; raise max_wait_ms to at least it'])
  })

  it('two bodies at once', () => {
    expect(problemsOf(`[targets.t]\ntype = "http"\ntier = 3\nurl = "https://t.example.com/x"\n[targets.t.actions.a]\nform = { a = "b" }\ngraphql = { query = "mutation { x }" }\n`)).toEqual([
      'targets.t.actions.a.graphql: give one of body, form or graphql, not several: each is a whole request body',
    ])
  })

  it('a tier-2 query that could not tell this effect from another', () => {
    expect(
      problemsOf(`[targets.t]
type = "http"
tier = 2
url = "https://t.example.com/x"
body = { a = "{args.a}" }
query = { url = "https://t.example.com/recent", found = "/0/id" }
`),
    ).toEqual([
      'targets.t.query: names neither {effect_id} nor an argument: it could not tell this effect from any other (carry {effect_id} in the request, e.g. a label or a marker, and look for it)',
    ])
  })

  it('a config without templates loads as before, and a target built in code is checked the same way', () => {
    expect(httpOf(`[targets.svc]\ntype = "http"\ntier = 2\nurl = "https://svc.example.com/x"\nquery_url = "https://svc.example.com/x/{effect_id}"\n`)).not.toHaveProperty('actions')
    expect(() => new HttpTarget('svc', { tier: 3, url: 'https://svc.example.com/x', receipt: 'id' })).toThrow(/targets\.svc\.receipt: /)
  })

  it('a secret whose value holds braces is no misspelt placeholder, and is not quoted in any message', () => {
    const toml = `[targets.svc]\ntype = "http"\ntier = 3\nurl = "https://svc.example.com/x/\${TOKEN}"\nbody = { a = "{args.a}", note = "\${TOKEN}" }\n`
    const config = parseConfig(toml, { file: '/etc/interlock/interlock.toml', env: { TOKEN: 'p{w}d{args}' } })
    const svc = config.targets.svc!
    expect(svc.type).toBe('http')
    if (svc.type !== 'http') throw new Error('unreachable')
    expect(() => new HttpTarget('svc', svc)).not.toThrow()
    // The same braces written in the file itself are a misspelt placeholder, named by key.
    expect(() => parseConfig(toml.replace('\${TOKEN}"\nbody', 'p{w}"\nbody'), { file: '/etc/interlock/interlock.toml', env: { TOKEN: 'x' } })).toThrow(/1 problem/)
  })
})

describe('refused at submit, before anything is journaled', () => {
  const target = () => new HttpTarget('payments', httpOf(REFUNDS))

  it('a call that lacks an argument a template needs, naming it', () => {
    const t = target()
    let err: unknown
    try {
      t.validateArgs('refund', { charge_id: 'ch_1' })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(InputError)
    expect((err as InputError).message).toBe("target payments, action refund: the call has no argument args.amount_cents, which the target's request template needs")
    expect((err as InputError).hint).toMatch(/Pass args\.amount_cents/)
  })

  it('an argument the action does not declare, an action the target does not take, a list where a URL needs one value', () => {
    const t = target()
    expect(() => t.validateArgs('refund', { charge_id: 'ch_1', amount_cents: 5, amount: 5 })).toThrow('target payments, action refund: unknown argument args.amount; it takes args.charge_id, args.amount_cents')
    expect(() => t.validateArgs('refnd', { charge_id: 'ch_1', amount_cents: 5 })).toThrow('target payments takes the actions refund; not refnd')
    expect(() => t.tierOf('refnd')).toThrow(InputError)
    t.validateArgs('refund', { charge_id: 'ch_1', amount_cents: 5 })
    const byId = new HttpTarget('svc', { tier: 3, url: 'https://svc.example.com/items/{args.id}' })
    expect(() => byId.validateArgs('get', { id: ['a', 'b'] })).toThrow('target svc: {args.id} in the URL must be a string, number or boolean, not a list')
  })

  it('behind a notary too: the notarized target refuses the same call at submit', async () => {
    const { notarized } = await import('../../src/core/notary/notarized.js')
    const { notaryClient } = await import('../../src/core/notary/client.js')
    const { generateKeyPair } = await import('../../src/core/crypto/keys.js')
    const inner = new HttpTarget('payments', { ...httpOf(REFUNDS), tier: 3 })
    const t = notarized(inner, { notary: notaryClient({ url: 'http://127.0.0.1:9', writer: 'agent', key: generateKeyPair('relay', 'agent') }), services: {} })
    expect(() => t.validateArgs!('refund', { charge_id: 'ch_1' })).toThrow('args.amount_cents')
    expect(typeof t.capture).toBe('function')
    await inner.close()
  })

  it('per-action tiers are journaled with the action', () => {
    const t = new HttpTarget(
      'jira',
      httpOf(`[targets.jira]
type = "http"
tier = 3
url = "https://jira.example.com/rest/api/3/issue"
body = { fields = { summary = "{args.summary}", labels = ["interlock-{effect_id}"] } }
[targets.jira.actions.create_tracked]
tier = 2
query = { url = "https://jira.example.com/rest/api/3/search/jql", params = { jql = "labels = interlock-{effect_id}" }, found = "/issues/0/key" }
[targets.jira.actions.create]
`),
    )
    expect(t.tierOf('create_tracked')).toBe(2)
    expect(t.tierOf('create')).toBe(3)
    expect(typeof t.query).toBe('function')
  })
})

describe('what an answer means, by the declared rules', () => {
  const answer = (status: number, body: unknown, retryAfter?: string): HttpAnswer => ({ status, body: body as never, text: JSON.stringify(body), headers: {}, ...(retryAfter ? { retryAfter } : {}) })
  const where = 'target t: POST https://t.example.com'

  it('an exact status beats a class in another list; a declared committed list narrows success', () => {
    const rules = { committed: [201], failed: ['4xx'], retryLater: [429] } as const
    expect(declaredOutcome(201, { ...rules, committed: [...rules.committed], failed: [...rules.failed], retryLater: [...rules.retryLater] })).toBe('committed')
    expect(declaredOutcome(429, { failed: ['4xx'], retryLater: [429] })).toBe('retryLater')
    expect(declaredOutcome(404, { failed: ['4xx'], retryLater: [429] })).toBe('failed')
    expect(declaredOutcome(200, { committed: [201] })).toBe('unknown')
    expect(declaredOutcome(200, {})).toBeUndefined()
  })

  it('the receipt keeps the value at its pointer; without one there it is an unknown outcome; an error in a 200 is FAILED', () => {
    expect(judgeAnswer(answer(201, { sid: 'SM1', status: 'queued' }), { receipt: '/sid' }, 1, where, 0)).toEqual({ status: 201, id: 'SM1', body: { sid: 'SM1', status: 'queued' } })
    const unknown = (() => {
      try {
        judgeAnswer(answer(200, { ok: true }), { receipt: '/sid' }, 1, where, 0)
      } catch (e) {
        return e as DispatchFault
      }
    })()
    expect(unknown?.kind).toBe('unknown')
    const gql = (() => {
      try {
        judgeAnswer(answer(200, { data: { issueCreate: null }, errors: [{ message: 'Argument Validation Error' }] }), { error: '/errors/0/message', receipt: '/data/issueCreate/issue/id' }, 2, where, 0)
      } catch (e) {
        return e as DispatchFault
      }
    })()
    expect(gql?.kind).toBe('refused')
    expect(gql?.message).toMatch(/Argument Validation Error/)
  })

  it('"not now" with the wait the service asks for; unlisted statuses keep the built-in reading', () => {
    const later = (() => {
      try {
        judgeAnswer(answer(503, { message: 'busy' }, '7'), { retryLater: [503] }, 1, where, 0)
      } catch (e) {
        return e as DispatchFault
      }
    })()
    expect(later).toMatchObject({ kind: 'retry-later', retryAfterMs: 7000 })
    const built = (() => {
      try {
        judgeAnswer(answer(502, {}), { retryLater: [503] }, 1, where, 0)
      } catch (e) {
        return e as DispatchFault
      }
    })()
    expect(built?.kind).toBe('unknown')
  })
})

describe('JSON pointers (RFC 6901)', () => {
  it('parses escapes and reads arrays by index', () => {
    expect(parsePointer('')).toEqual([])
    expect(parsePointer('/a~1b/~0c')).toEqual(['a/b', '~c'])
    expect(parsePointer('a')).toBeNull()
    expect(valueAt({ issues: [{ key: 'OPS-1' }] }, '/issues/0/key')).toBe('OPS-1')
    expect(valueAt({ issues: [] }, '/issues/0/key')).toBeUndefined()
    expect(valueAt([1, 2], '/01')).toBeUndefined()
  })
})

it('an effect built from a call reaches the same request every time (its id is in it)', () => {
  const e = toEffect({ thread: 't', target: 'payments', action: 'refund', args: { charge_id: 'ch_1', amount_cents: 1 } })
  const c = httpOf(REFUNDS)
  const spec = specFor(specsOf('payments', c), 'refund')!
  const a = buildRequest(spec.request, { effect_id: e.id, action: e.action, args: e.args }, spec.effectIdHeader)
  const b = buildRequest(spec.request, { effect_id: e.id, action: e.action, args: e.args }, spec.effectIdHeader)
  expect(a).toEqual(b)
  expect(a.headers['idempotency-key']).toBe(e.id)
})

it('the three APIs declared in docs/targets.md load and build as written', async () => {
  const { createTargets } = await import('../../src/core/targets/registry.js')
  const doc = readFileSync(join(import.meta.dirname, '../../docs/targets.md'), 'utf8')
  const start = doc.indexOf('### Three published APIs, declared')
  // To the next heading, whatever it is.
  const section = doc.slice(start, start + 1 + doc.slice(start + 1).search(/\n#{2,3} /))
  const blocks = [...section.matchAll(/```toml\n([\s\S]*?)```/g)].map((m) => m[1]!)
  expect(blocks).toHaveLength(3)
  const env = { TWILIO_ACCOUNT_SID: 'AC1', TWILIO_BASIC_AUTH: 'Basic eA==', TWILIO_FROM: '+15005550006', LINEAR_API_KEY: 'lin_api_x', JIRA_BASIC_AUTH: 'Basic eQ==' }
  for (const block of blocks) {
    const config = parseConfig(block, { file: FILE, env })
    const targets = createTargets(config.targets)
    expect(targets.size).toBe(1)
    for (const t of targets.values()) await t.close?.()
  }
})
