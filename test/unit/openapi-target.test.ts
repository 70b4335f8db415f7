/**
 * `interlock targets from-openapi`'s mapping, on small hand-written
 * documents: each generated section is loaded by Interlock's own config
 * loader and the request it would send is built by the http target's own
 * code (no network), so what is checked is what the target really does
 * with the text, not the text alone.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseToml } from 'smol-toml'
import { afterAll, describe, expect, it } from 'vitest'
import { stringify as toYaml } from 'yaml'
import { parseConfig } from '../../src/core/config/load.js'
import type { HttpTargetConfig } from '../../src/core/config/types.js'
import { InputError, NotFoundError, UsageError, type InterlockError } from '../../src/core/errors.js'
import { specFor, specsOf } from '../../src/core/targets/http/actions.js'
import { loadOpenApi, parseOpenApi } from '../../src/core/targets/http/openapi/document.js'
import { targetFromDocument, targetFromOpenApi, type FromOpenApiOptions, type GeneratedTarget } from '../../src/core/targets/http/openapi/from-openapi.js'
import { buildRequest } from '../../src/core/targets/http/request.js'

const ID = 'cd'.repeat(32)
const dir = mkdtempSync(join(tmpdir(), 'interlock-openapi-unit-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

type Doc = Record<string, unknown>

function generate(doc: Doc, options: Partial<FromOpenApiOptions> & { operations: string[] }): GeneratedTarget {
  return targetFromDocument(parseOpenApi(JSON.stringify(doc), '/docs/api.json'), options)
}

/** The section as interlock.toml loads it, its variables set. */
function loaded(gen: GeneratedTarget, env: Record<string, string> = {}): HttpTargetConfig {
  const vars = Object.fromEntries(gen.variables.map((v) => [v, env[v] ?? `secret-value-of-${v.toLowerCase()}`]))
  const config = parseConfig(gen.toml, { file: '/srv/agent/interlock.toml', env: vars })
  const t = config.targets[gen.name]
  if (t?.type !== 'http') throw new Error(`no http target ${gen.name}`)
  return t
}

/** The request the http target would send for a call. */
function requestOf(gen: GeneratedTarget, action: string, args: Record<string, unknown>, env: Record<string, string> = {}) {
  const spec = specFor(specsOf(gen.name, loaded(gen, env)), action)!
  return { spec, request: buildRequest(spec.request, { effect_id: ID, action, args: args as never }, spec.effectIdHeader) }
}

function thrown(fn: () => unknown): InterlockError {
  try {
    fn()
  } catch (e) {
    return e as InterlockError
  }
  throw new Error('expected an error')
}

const ok = (schemaRef: string) => ({ description: 'Created', content: { 'application/json': { schema: { $ref: schemaRef } } } })

/** A payments API: path, query, header and cookie parameters, a JSON body of $refs and allOf, a bearer scheme. */
const payments: Doc = {
  openapi: '3.0.3',
  info: { title: 'Payments API', version: '2.1.0' },
  servers: [{ url: 'https://api.payments.test/{stage}', variables: { stage: { default: 'v2' } } }],
  security: [{ bearerAuth: [] }],
  paths: {
    '/accounts/{account_id}/charges': {
      parameters: [{ $ref: '#/components/parameters/AccountId' }],
      get: { operationId: 'listCharges', summary: 'List charges', responses: { 200: { description: 'ok' } } },
      post: {
        operationId: 'createCharge',
        summary: 'Create a charge',
        externalDocs: { url: 'https://docs.payments.example.com/charges#create' },
        parameters: [
          { name: 'expand', in: 'query', required: true, schema: { type: 'string' } },
          { name: 'dry_run', in: 'query', schema: { type: 'boolean' } },
          { name: 'X-Api-Version', in: 'header', required: true, schema: { type: 'string', enum: ['2024-01-01'] } },
          { name: 'X-Tenant', in: 'header', required: true, schema: { type: 'string' } },
          { name: 'session', in: 'cookie', schema: { type: 'string' } },
        ],
        requestBody: { $ref: '#/components/requestBodies/ChargeBody' },
        responses: { 201: ok('#/components/schemas/Charge'), 400: { description: 'Bad request' } },
      },
    },
    '/accounts/{account_id}/charges/{charge_id}': {
      get: { operationId: 'getCharge', responses: { 200: { description: 'ok' } } },
      delete: { operationId: 'cancelCharge', parameters: [{ $ref: '#/components/parameters/AccountId' }, { name: 'charge_id', in: 'path', required: true, schema: { type: 'string' } }], responses: { 204: { description: 'Cancelled' } } },
    },
  },
  components: {
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
    parameters: { AccountId: { name: 'account_id', in: 'path', required: true, schema: { type: 'string' } } },
    requestBodies: { ChargeBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/NewCharge' } } } } },
    schemas: {
      Money: { type: 'object', properties: { amount: { type: 'integer' }, currency: { type: 'string' } }, required: ['amount', 'currency'] },
      NewCharge: {
        allOf: [
          { $ref: '#/components/schemas/Money' },
          { type: 'object', properties: { description: { type: 'string' }, metadata: { type: 'object' }, object: { type: 'string', const: 'charge' }, id: { type: 'string', readOnly: true } }, required: ['description', 'object'] },
        ],
      },
      Charge: { type: 'object', properties: { id: { type: 'string' }, status: { type: 'string' } }, required: ['id', 'status'] },
    },
  },
}

/** A messages API in Twilio's shape: a form body and an idempotency header, HTTP basic. */
const messages: Doc = {
  openapi: '3.1.0',
  info: { title: 'Messages', version: '1.0' },
  servers: [{ url: 'https://api.twilio.com' }],
  security: [{ accountSid_authToken: [] }],
  paths: {
    '/2010-04-01/Accounts/{AccountSid}/Messages.json': {
      post: {
        operationId: 'CreateMessage',
        parameters: [
          { name: 'AccountSid', in: 'path', required: true, schema: { type: 'string', maxLength: 34 } },
          { name: 'I-Twilio-Idempotency-Token', in: 'header', schema: { type: 'string' } },
        ],
        requestBody: {
          content: {
            'application/x-www-form-urlencoded': {
              schema: {
                type: 'object',
                required: ['To', 'Body'],
                properties: { To: { type: 'string' }, Body: { type: 'string' }, MediaUrl: { type: 'array', items: { type: 'string' } }, StatusCallback: { type: 'string' }, Tags: { type: 'object' } },
              },
            },
          },
        },
        responses: { 201: { description: 'Created', content: { 'application/json': { schema: { type: 'object', required: ['sid'], properties: { sid: { type: 'string' } } } } } } },
      },
    },
  },
  components: { securitySchemes: { accountSid_authToken: { type: 'http', scheme: 'basic' } } },
}

describe('parameters and a JSON body', () => {
  const gen = generate(payments, { operations: ['createCharge'] })

  it('maps path, query and header parameters and the body ($ref, allOf) to the templates the http target fills in', () => {
    const { request } = requestOf(gen, 'create_charge', { account_id: 'acct 1', expand: 'customer', amount: 1250, currency: 'eur', description: 'Order 7' }, { PAYMENTS_TOKEN: 'tok_123456', PAYMENTS_X_TENANT: 'acme' })
    expect(request.method).toBe('POST')
    expect(request.url).toBe('https://api.payments.test/v2/accounts/acct%201/charges?expand=customer')
    expect(request.headers).toMatchObject({ Authorization: 'Bearer tok_123456', 'X-Api-Version': '2024-01-01', 'X-Tenant': 'acme', 'content-type': 'application/json' })
    // One placeholder per property, the argument's type kept; a const written as itself; readOnly left out.
    expect(JSON.parse(request.body!)).toEqual({ amount: 1250, currency: 'eur', description: 'Order 7', object: 'charge' })
  })

  it('declares the action as interlock.toml spells it: args, committed, receipt; the target named from the host', () => {
    expect(gen.name).toBe('payments')
    const action = (parseToml(gen.toml) as any).targets.payments.actions.create_charge
    expect(action).toMatchObject({ method: 'POST', args: ['account_id', 'expand', 'amount', 'currency', 'description'], committed: [201], receipt: '/id' })
    expect(action.url).toBe('https://api.payments.test/v2/accounts/{args.account_id}/charges')
    expect(action.params).toEqual({ expand: '{args.expand}' })
  })

  it('names what it left out: the cookie, the optional query parameter and body property, the readOnly one', () => {
    expect(gen.notes.join('\n')).toMatch(/cookie parameter session/)
    expect(gen.notes.join('\n')).toMatch(/query parameters: dry_run; body properties: metadata/)
    expect(gen.notes.join('\n')).toMatch(/body property id is readOnly/)
    expect(gen.notes.join('\n')).toMatch(/X-Tenant is read from the environment variable PAYMENTS_X_TENANT/)
    expect(gen.toml).toContain('# createCharge: POST /accounts/{account_id}/charges. Create a charge.')
    expect(gen.toml).toContain('# https://docs.payments.example.com/charges#create')
    expect(gen.toml).toContain('Server variable {stage} is its default, v2.')
  })

  it('--include sends an optional one too, as an argument every call must pass', () => {
    const more = generate(payments, { operations: ['createCharge'], include: ['dry_run,metadata'] })
    const { request } = requestOf(more, 'create_charge', { account_id: 'a', expand: 'x', dry_run: true, amount: 1, currency: 'eur', description: 'd', metadata: { k: 'v' } })
    expect(request.url).toContain('dry_run=true')
    expect(JSON.parse(request.body!).metadata).toEqual({ k: 'v' })
    expect(more.notes.join('\n')).not.toMatch(/Not sent/)
    const err = thrown(() => generate(payments, { operations: ['createCharge'], include: ['dryrun'] }))
    expect(err).toBeInstanceOf(UsageError)
    expect(err.message).toContain('--include dryrun')
    expect(err.hint).toContain('dry_run')
  })

  it('no body: an empty JSON object, never Interlock\'s envelope; a 204 answer keeps no receipt', () => {
    const del = generate(payments, { operations: ['cancelCharge'] })
    const { request } = requestOf(del, 'cancel_charge', { account_id: 'a', charge_id: 'ch_1' })
    expect(request.method).toBe('DELETE')
    expect(request.body).toBe('{}')
    expect((parseToml(del.toml) as any).targets.payments.actions.cancel_charge.receipt).toBeUndefined()
  })
})

describe('the tier the document allows', () => {
  it('an idempotency header: tier 1, the effect id sent in it; a form body; HTTP basic from a variable', () => {
    const gen = generate(messages, { operations: ['CreateMessage'] })
    expect(gen).toMatchObject({ name: 'twilio', tier: 1, variables: ['TWILIO_BASIC_AUTH'] })
    const { spec, request } = requestOf(gen, 'create_message', { AccountSid: 'AC1', To: '+15550001', Body: 'Shipped', MediaUrl: 'x' }, { TWILIO_BASIC_AUTH: 'QUMxOnRva2Vu' })
    expect(spec.tier).toBe(1)
    expect(request.headers['i-twilio-idempotency-token']).toBe(ID)
    expect(request.headers.Authorization).toBe('Basic QUMxOnRva2Vu')
    expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded')
    expect(request.body).toBe('To=%2B15550001&Body=Shipped')
    expect(gen.toml).toMatch(/# Tier 1: the document declares the header I-Twilio-Idempotency-Token/)
    expect((parseToml(gen.toml) as any).targets.twilio.actions.create_message).toMatchObject({ effect_id_header: 'I-Twilio-Idempotency-Token', receipt: '/sid', committed: [201] })
    expect(gen.notes.join('\n')).toMatch(/form fields: MediaUrl, StatusCallback/)
  })

  it('none: tier 3, and a comment on what to check by hand to make it tier 2, naming the reads near the path', () => {
    const gen = generate(payments, { operations: ['createCharge'] })
    expect(gen.tier).toBe(3)
    expect(gen.toml).toMatch(/# Tier 3: the document declares no idempotency header/)
    const hint = gen.notes.find((n) => n.startsWith('To check by hand'))!
    expect(hint).toContain('[targets.payments.actions.create_charge.query]')
    expect(hint).toContain('GET /accounts/{account_id}/charges (listCharges)')
    expect(hint).toContain('GET /accounts/{account_id}/charges/{charge_id} (getCharge)')
  })

  it('an idempotency header capped shorter than the effect id is not used: tier 3, said', () => {
    const capped = structuredClone(messages) as any
    capped.paths['/2010-04-01/Accounts/{AccountSid}/Messages.json'].post.parameters[1].schema.maxLength = 36
    const gen = generate(capped, { operations: ['CreateMessage'] })
    expect(gen.tier).toBe(3)
    expect(gen.toml).toContain('caps it at 36 characters')
  })

  it('several operations: one target, an action each, the tier-1 one saying its own tier', () => {
    const both = structuredClone(messages) as any
    both.paths['/2010-04-01/Accounts/{AccountSid}/Calls.json'] = { post: { operationId: 'CreateCall', parameters: [{ name: 'AccountSid', in: 'path', required: true }], responses: { 201: { description: 'ok' } } } }
    const gen = generate(both, { operations: ['CreateMessage', 'CreateCall'] })
    const t = loaded(gen)
    expect(gen.tier).toBe(3)
    expect(t.actions!.create_message!.tier).toBe(1)
    expect(t.actions!.create_call!.tier).toBeUndefined()
    expect(gen.notes.some((n) => n.startsWith('CreateCall: To check by hand'))).toBe(true)
    const err = thrown(() => generate(both, { operations: ['CreateMessage', 'CreateCall'], include: ['Bodyy'] }))
    expect(err.message).toBe('--include Bodyy: none of the operations CreateMessage, CreateCall has an optional parameter or body property of that name')
  })
})

describe('credentials', () => {
  const withScheme = (scheme: Record<string, unknown>, security: unknown[] = [{ s: [] }]) => {
    const d = structuredClone(payments) as any
    d.components.securitySchemes = { s: scheme }
    d.security = security
    return d
  }

  it('an API key header is read from a variable named after the target; never a literal', () => {
    const gen = generate(withScheme({ type: 'apiKey', in: 'header', name: 'X-Api-Key' }), { operations: ['createCharge'], name: 'billing' })
    expect(gen.variables).toContain('BILLING_X_API_KEY')
    const { request } = requestOf(gen, 'create_charge', { account_id: 'a', expand: 'x', amount: 1, currency: 'eur', description: 'd' }, { BILLING_X_API_KEY: 'key-123456' })
    expect(request.headers['X-Api-Key']).toBe('key-123456')
    expect(gen.toml).toContain('X-Api-Key = "${BILLING_X_API_KEY}"')
  })

  it('an API key in the query is left out and said (the http target keeps only headers secret); OAuth 2 is a bearer token', () => {
    const query = generate(withScheme({ type: 'apiKey', in: 'query', name: 'api_key' }), { operations: ['createCharge'] })
    expect(query.toml).not.toMatch(/api_key =/)
    expect(query.notes.join('\n')).toMatch(/API key in the query, which the http target does not keep secret/)
    const oauth = generate(withScheme({ type: 'oauth2', flows: {} }), { operations: ['createCharge'] })
    expect(oauth.toml).toContain('Authorization = "Bearer ${PAYMENTS_TOKEN}"')
  })

  it('security: [] means none; a document without any says so, and --auth bearer adds one', () => {
    const none = generate(withScheme({ type: 'http', scheme: 'bearer' }, []), { operations: ['createCharge'] })
    expect(none.toml).not.toContain('Authorization')
    const bare = structuredClone(payments) as any
    delete bare.security
    delete bare.components.securitySchemes
    const undeclared = generate(bare, { operations: ['createCharge'] })
    expect(undeclared.notes.join('\n')).toMatch(/declares no security scheme/)
    const bearer = generate(bare, { operations: ['createCharge'], auth: 'bearer' })
    expect(bearer.toml).toContain('Authorization = "Bearer ${PAYMENTS_TOKEN}"')
  })
})

describe('bodies that are not a plain object', () => {
  const withBody = (content: Record<string, unknown>) => {
    const d = structuredClone(payments) as any
    d.paths['/accounts/{account_id}/charges'].post.requestBody = { content }
    return d
  }

  it('a oneOf body is sent whole from one argument, said', () => {
    const gen = generate(withBody({ 'application/json': { schema: { oneOf: [{ $ref: '#/components/schemas/Money' }, { type: 'string' }] } } }), { operations: ['createCharge'] })
    expect(gen.notes.join('\n')).toMatch(/one of 2 shapes \(oneOf\).*argument body is sent whole/)
    const { request } = requestOf(gen, 'create_charge', { account_id: 'a', expand: 'x', body: { amount: 5, currency: 'usd' } })
    expect(JSON.parse(request.body!)).toEqual({ amount: 5, currency: 'usd' })
  })

  it('multipart beside JSON is left out and said; multipart alone cannot be declared', () => {
    const both = generate(withBody({ 'multipart/form-data': { schema: { type: 'object' } }, 'application/merge-patch+json': { schema: { $ref: '#/components/schemas/Money' } } }), { operations: ['createCharge'] })
    expect(both.notes.join('\n')).toMatch(/other media type multipart\/form-data/)
    expect(requestOf(both, 'create_charge', { account_id: 'a', expand: 'x', amount: 1, currency: 'eur' }).request.headers['Content-Type']).toBe('application/merge-patch+json')
    const err = thrown(() => generate(withBody({ 'multipart/form-data': { schema: { type: 'object' } } }), { operations: ['createCharge'] }))
    expect(err).toBeInstanceOf(InputError)
    expect(err.message).toContain('operation createCharge sends its body as multipart/form-data')
  })

  it('a literal ${ from the document stays literal: not read as an environment variable', () => {
    const d = structuredClone(payments) as any
    d.paths['/accounts/{account_id}/charges'].post.parameters[2].schema = { type: 'string', default: 'v${2}' }
    d.paths['/odd/${x}/{id}'] = { post: { operationId: 'odd', parameters: [{ name: 'id', in: 'path', required: true }], responses: { 200: { description: 'ok' } } } }
    const gen = generate(d, { operations: ['createCharge', 'odd'] })
    expect(gen.variables).toEqual(['PAYMENTS_TOKEN', 'PAYMENTS_X_TENANT'])
    const t = loaded(gen)
    expect(t.actions!.create_charge!.headers!['X-Api-Version']).toBe('v${2}')
    expect(t.actions!.odd!.url).toBe('https://api.payments.test/v2/odd/${x}/{args.id}')
  })

  it('text from the document cannot leave its comment: a summary with newlines and a fake table stays a comment', () => {
    const d = structuredClone(payments) as any
    d.paths['/accounts/{account_id}/charges'].post.summary = 'Create\n[targets.evil]\ntype = "http"\u0000'
    const gen = generate(d, { operations: ['createCharge'] })
    expect(Object.keys((parseToml(gen.toml) as any).targets)).toEqual(['payments'])
  })
})

describe('finding the operation', () => {
  it('an unknown operationId: not found, with the nearest names', () => {
    const err = thrown(() => generate(payments, { operations: ['createCharg'] }))
    expect(err).toBeInstanceOf(NotFoundError)
    expect(err.exitCode).toBe(7)
    expect(err.message).toBe('api.json has no operation "createCharg"; did you mean "createCharge"?')
    expect(err.hint).toContain('--list')
  })

  it('a read is refused: it is no effect', () => {
    const err = thrown(() => generate(payments, { operations: ['listCharges'] }))
    expect(err).toBeInstanceOf(UsageError)
    expect(err.exitCode).toBe(2)
    expect(err.message).toContain('operation listCharges is GET /accounts/{account_id}/charges: a read, not an effect')
  })

  it('"METHOD /path" names an operation too', () => {
    expect(generate(payments, { operations: ['post /accounts/{account_id}/charges'] }).actions[0]!.operation).toBe('createCharge')
  })
})

describe('the document', () => {
  it('YAML reads as JSON does; a parsed file is kept until it changes', () => {
    const file = join(dir, 'messages.yaml')
    writeFileSync(file, toYaml(messages))
    const gen = targetFromOpenApi(file, { operations: ['CreateMessage'] })
    expect(gen.toml).toBe(generate(messages, { operations: ['CreateMessage'] }).toml.replace('api.json', 'messages.yaml'))
    expect(loadOpenApi(file)).toBe(loadOpenApi(file))
    const before = loadOpenApi(file)
    writeFileSync(file, toYaml({ ...messages, info: { title: 'Messages, renamed', version: '1.1' } }))
    expect(loadOpenApi(file)).not.toBe(before)
    expect(loadOpenApi(file).title).toBe('Messages, renamed')
  })

  it('what is not an OpenAPI 3 document is refused naming the file', () => {
    const cases: [string, string, RegExp][] = [
      ['swagger.json', JSON.stringify({ swagger: '2.0', paths: {} }), /swagger\.json is Swagger 2\.0 \(OpenAPI 2\), not OpenAPI 3/],
      ['broken.json', '{"openapi": "3.0.0",', /broken\.json is not valid JSON/],
      ['broken.yaml', 'openapi: [3\n  x: : :', /broken\.yaml is neither valid JSON nor valid YAML/],
      ['other.json', JSON.stringify({ name: 'a package' }), /other\.json is not an OpenAPI 3 document: it has no "openapi" field/],
    ]
    for (const [name, text, message] of cases) {
      writeFileSync(join(dir, name), text)
      const err = thrown(() => targetFromOpenApi(join(dir, name), { operations: ['x'] }))
      expect(err, name).toBeInstanceOf(InputError)
      expect(err.message, name).toMatch(message)
    }
    const missing = thrown(() => targetFromOpenApi(join(dir, 'nope.json'), { operations: ['x'] }))
    expect(missing).toBeInstanceOf(NotFoundError)
    expect(missing.message).toContain('nope.json: no such file')
    expect(thrown(() => targetFromOpenApi('https://example.com/api.json', { operations: ['x'] }))).toBeInstanceOf(UsageError)
  })
})
