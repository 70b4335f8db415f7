import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ajv } from 'ajv'
import { describe, expect, it } from 'vitest'
import { defaultConfig } from '../../src/core/config/defaults.js'
import { loadConfig, parseConfig } from '../../src/core/config/load.js'
import { redact, redactValue } from '../../src/core/config/redact.js'
import { configSchema } from '../../src/core/config/schema.js'
import { CONFIG_DOC, SCHEMA_FILE, schemaJson } from '../../src/core/config/write-schema.js'
import { ConfigError, ExitCode } from '../../src/core/errors.js'

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const FILE = '/srv/agent/interlock.toml'

function problemsOf(text: string, env: Record<string, string> = {}): string[] {
  try {
    parseConfig(text, { file: FILE, env })
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).exitCode).toBe(ExitCode.CONFIG)
    return [...(error as ConfigError).problems]
  }
  throw new Error('expected a ConfigError')
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'interlock-config-'))
}

const HTTP = 'type = "http"\nurl = "https://api.example.com/x"\n'

describe('the example config', () => {
  it('loads, with every documented target', () => {
    const config = loadConfig({
      path: join(repo, 'interlock.toml.example'),
      env: { PAYMENTS_API_TOKEN: 'tok_example_123' },
    })
    expect(config.file).toBe(join(repo, 'interlock.toml.example'))
    expect(config.store).toEqual({ kind: 'sqlite', path: join(repo, 'interlock.db') })
    expect(Object.keys(config.targets).sort()).toEqual(['docs', 'email', 'refunds', 'tickets'])
    expect(config.targets.refunds).toMatchObject({ tier: 1, headers: { Authorization: 'Bearer tok_example_123' } })
    expect(config.secrets).toEqual(['tok_example_123'])
  })

  it('builds every target it declares', async () => {
    const { createTargets } = await import('../../src/core/targets/registry.js')
    const config = loadConfig({ path: join(repo, 'interlock.toml.example'), env: { PAYMENTS_API_TOKEN: 'tok_example_123' } })
    const targets = createTargets(config.targets)
    expect([...targets.keys()].sort()).toEqual(Object.keys(config.targets).sort())
    for (const t of targets.values()) await t.close?.()
  })

  it('documents every key the schema knows', () => {
    const example = readFileSync(join(repo, 'interlock.toml.example'), 'utf8')
    for (const key of allSchemaKeys(configSchema)) expect(example, key).toMatch(new RegExp(`\\b${key}\\b`))
  })
})

describe('the JSON Schema', () => {
  it('is committed exactly as schema.ts generates it (run `npm run schema`)', () => {
    expect(readFileSync(join(repo, SCHEMA_FILE), 'utf8')).toBe(schemaJson())
  })

  it('compiles as plain draft-07 and describes every property', () => {
    const ajv = new Ajv({ strict: false })
    expect(() => ajv.compile(configSchema)).not.toThrow()
    for (const [path, node] of allProperties(configSchema)) expect(node.description, path).toBeTruthy()
  })
})

describe('validation names the key path of every problem', () => {
  it('unknown key at the top level', () => {
    expect(problemsOf('polcy = 1\n')).toEqual(['polcy: unknown key (did you mean "policy"?)'])
  })

  it('unknown key nested, with a suggestion', () => {
    expect(problemsOf('[store]\npathh = "x.db"\n')).toEqual(['store.pathh: unknown key (did you mean "path"?)'])
    expect(problemsOf(`[targets.pay]\n${HTTP}tier = 1\ntimeout = 5\n`)).toEqual(['targets.pay.timeout: unknown key'])
  })

  it('a key of the other store kind is unknown', () => {
    expect(problemsOf('[store]\nkind = "sqlite"\nurl = "postgres://x"\n')).toEqual(['store.url: unknown key'])
  })

  it('wrong type', () => {
    expect(problemsOf('[gate]\nmax_attempts = "5"\n')).toEqual(['gate.max_attempts: must be an integer'])
    expect(problemsOf('store = "sqlite"\n')).toEqual(['store: must be a table'])
  })

  it('store.access: "agent" for an agent\'s outbox, "full" by default; PostgreSQL only', () => {
    const pg = '[store]\nkind = "postgres"\nurl = "postgres://db/x"\n'
    expect(parseConfig(`${pg}access = "agent"\n`, { file: FILE }).store).toMatchObject({ kind: 'postgres', access: 'agent' })
    expect(problemsOf(`${pg}access = "root"\n`)).toEqual(['store.access: must be "full" or "agent"'])
    expect(problemsOf('[store]\nkind = "sqlite"\naccess = "agent"\n')).toEqual(['store.access: unknown key'])
  })

  it('wrong enum', () => {
    expect(problemsOf(`[targets.payments]\n${HTTP}tier = 4\n`)).toEqual(['targets.payments.tier: must be 1, 2 or 3'])
    expect(problemsOf('[store]\nkind = "mysql"\n')).toEqual(['store.kind: must be "sqlite" or "postgres"'])
  })

  it('out of range', () => {
    expect(problemsOf('[gate]\nmax_attempts = 0\n')).toEqual(['gate.max_attempts: must be at least 1'])
    expect(problemsOf('[gate]\nmax_wait_ms = -1\n')).toEqual(['gate.max_wait_ms: must be at least 0'])
  })

  it('gate.max_wait_ms caps the wait in place a service may ask for', () => {
    expect(parseConfig('[gate]\nmax_wait_ms = 1500\n', { file: FILE }).gate.maxWaitMs).toBe(1500)
    expect(parseConfig('', { file: FILE }).gate.maxWaitMs).toBe(30_000)
  })

  it('missing required key', () => {
    expect(problemsOf('[targets.docs]\ntype = "repo"\n')).toEqual(['targets.docs.path: required key is missing'])
    expect(problemsOf('[store]\nkind = "postgres"\n')).toEqual(['store.url: required key is missing'])
    expect(problemsOf('[targets.x]\nurl = "https://x"\n')).toEqual(['targets.x.type: required key is missing'])
  })

  it('tier 2 http target without query_url', () => {
    expect(problemsOf(`[targets.tickets]\n${HTTP}tier = 2\n`)).toEqual([
      'targets.tickets.query_url: required when tier = 2 (the gate asks it whether an effect already happened)',
    ])
  })

  it('query_url on a tier that never uses it', () => {
    expect(problemsOf(`[targets.mail]\n${HTTP}tier = 3\nquery_url = "https://x"\n`)).toEqual([
      'targets.mail.query_url: only used when tier = 2; remove it, or set tier = 2 if the service can be asked',
    ])
  })

  it('bad formats, and names that need quoting', () => {
    expect(problemsOf('[targets."my api"]\ntype = "repo"\npath = "."\n')).toEqual([
      'targets."my api": invalid name: target names use letters, digits, "_" and "-" (at most 64 characters)',
    ])
    expect(problemsOf(`[targets.x]\ntype = "http"\ntier = 1\nurl = "ftp://x"\n`)).toEqual([
      'targets.x.url: must be an http:// or https:// URL, or start with a ${VAR} reference',
    ])
  })

  it('missing environment variable', () => {
    expect(problemsOf(`[targets.pay]\n${HTTP}tier = 1\nheaders = { Authorization = "Bearer \${PAY_TOKEN}" }\n`)).toEqual([
      'targets.pay.headers.Authorization: environment variable PAY_TOKEN is not set',
    ])
  })

  it('lists all problems at once, schema and environment alike', () => {
    const problems = problemsOf(
      `bogus = true\n[store]\npathh = 1\n[gate]\nbackoff_ms = -1\n[targets.a]\n${HTTP}tier = 2\n[targets.b]\ntype = "http"\ntier = 1\nurl = "\${NOPE}"\n`,
    )
    expect(problems).toEqual(
      expect.arrayContaining([
        'bogus: unknown key',
        'store.pathh: unknown key (did you mean "path"?)',
        'gate.backoff_ms: must be at least 0',
        'targets.a.query_url: required when tier = 2 (the gate asks it whether an effect already happened)',
        'targets.b.url: environment variable NOPE is not set',
      ]),
    )
    expect(problems).toHaveLength(5)
  })

  it('a TOML syntax error names the file, line and column', () => {
    let caught: ConfigError | undefined
    try {
      parseConfig('[store]\nkind = "sqlite"\npath = = "x"\n', { file: FILE, shown: 'interlock.toml' })
    } catch (error) {
      caught = error as ConfigError
    }
    expect(caught).toBeInstanceOf(ConfigError)
    expect(caught!.message).toMatch(/^interlock\.toml:3:8: TOML syntax error: /)
    expect(caught!.problems[0]).toMatch(/^line 3, column 8: /)
    expect(caught!.context).toMatchObject({ line: 3, column: 8 })
  })
})

describe('environment references', () => {
  it('resolves them and records the values as secrets', () => {
    const config = parseConfig(
      `[store]\nkind = "postgres"\nurl = "\${DB_URL}"\n[targets.pay]\n${HTTP}tier = 1\nheaders = { Authorization = "Bearer \${PAY_TOKEN}" }\n`,
      { file: FILE, env: { DB_URL: 'postgres://u:pw@db/x', PAY_TOKEN: 'sk_live_abc' } },
    )
    expect(config.store).toEqual({
      kind: 'postgres',
      url: 'postgres://u:pw@db/x',
      schema: 'interlock',
      access: 'full',
      statementTimeoutMs: 15_000,
      lockTimeoutMs: 5_000,
      idleInTransactionTimeoutMs: 10_000,
    })
    expect(config.targets.pay).toMatchObject({ headers: { Authorization: 'Bearer sk_live_abc' } })
    expect(config.secrets.sort()).toEqual(['postgres://u:pw@db/x', 'sk_live_abc'])
  })

  it('a ${ without its closing brace is a problem naming the key, not a literal', () => {
    let caught: ConfigError | undefined
    try {
      parseConfig(`[targets.h4]\n${HTTP}tier = 1\nheaders = { Authorization = "Bearer \${H4_TOKEN" }\n`, { file: FILE, env: { H4_TOKEN: 'tok_123456789' } })
    } catch (e) {
      caught = e as ConfigError
    }
    expect(caught).toBeInstanceOf(ConfigError)
    expect(caught!.problems).toEqual(['targets.h4.headers.Authorization: "${H4_TOKEN" has no closing brace (write ${NAME}, or $${ for a literal ${)'])
  })

  it('$${ is a literal ${ and is not a reference', () => {
    const config = parseConfig(`[targets.pay]\n${HTTP}tier = 1\nheaders = { X = "a$\${B}" }\n`, { file: FILE, env: {} })
    expect(config.targets.pay).toMatchObject({ headers: { X: 'a${B}' } })
    expect(config.secrets).toEqual([])
  })
})

describe('defaults and paths', () => {
  it('applies every default', () => {
    const config = parseConfig(`[targets.docs]\ntype = "repo"\npath = "repo"\n[targets.pay]\n${HTTP}tier = 1\n`, { file: FILE })
    expect(config).toEqual({
      file: FILE,
      store: { kind: 'sqlite', path: '/srv/agent/interlock.db' },
      gate: { maxAttempts: 5, backoffMs: 200, maxWaitMs: 30_000 },
      reconcile: { olderThanMs: 300_000, concurrency: 4 },
      relay: { concurrency: 32, leaseMs: 30_000, pollMs: 1_000, logFormat: 'text', stallMs: 20_000, heartbeatRetentionMs: 7 * 86_400_000 },
      targets: {
        docs: { type: 'repo', path: '/srv/agent/repo', branch: 'main', author: 'Interlock <interlock@localhost>' },
        pay: {
          type: 'http',
          tier: 1,
          url: 'https://api.example.com/x',
          method: 'POST',
          headers: {},
          timeoutMs: 10_000,
          connectTimeoutMs: 3_000,
        },
      },
      operators: [],
      policy: { rules: [] },
      notify: [],
      secrets: [],
    })
  })

  it('resolves relative paths against the config file, not the working directory', () => {
    const dir = tempDir()
    mkdirSync(join(dir, 'deploy'))
    writeFileSync(join(dir, 'deploy', 'interlock.toml'), '[store]\npath = "../data/j.db"\n[targets.r]\ntype = "repo"\npath = "/abs/repo"\n')
    const config = loadConfig({ path: 'deploy/interlock.toml', cwd: dir, env: {} })
    expect(config.store).toEqual({ kind: 'sqlite', path: join(dir, 'data', 'j.db') })
    expect(config.targets.r).toMatchObject({ path: '/abs/repo' })
  })

  it('keeps :memory: as it is', () => {
    expect(parseConfig('[store]\npath = ":memory:"\n', { file: FILE }).store).toEqual({ kind: 'sqlite', path: ':memory:' })
  })
})

describe('which file is read', () => {
  it('an explicit path beats INTERLOCK_CONFIG, which beats ./interlock.toml', () => {
    const dir = tempDir()
    writeFileSync(join(dir, 'interlock.toml'), '[gate]\nmax_attempts = 1\n')
    writeFileSync(join(dir, 'env.toml'), '[gate]\nmax_attempts = 2\n')
    writeFileSync(join(dir, 'flag.toml'), '[gate]\nmax_attempts = 3\n')
    const env = { INTERLOCK_CONFIG: 'env.toml' }
    expect(loadConfig({ cwd: dir, env: {} }).gate.maxAttempts).toBe(1)
    expect(loadConfig({ cwd: dir, env }).gate.maxAttempts).toBe(2)
    expect(loadConfig({ cwd: dir, env, path: 'flag.toml' }).gate.maxAttempts).toBe(3)
  })

  it('no file: the embedded default when allowed, a ConfigError otherwise', () => {
    const dir = tempDir()
    expect(loadConfig({ cwd: dir, env: {}, allowMissing: true })).toEqual(defaultConfig(dir))
    expect(defaultConfig(dir).store).toEqual({ kind: 'sqlite', path: join(dir, 'interlock.db') })
    expect(() => loadConfig({ cwd: dir, env: {} })).toThrow(ConfigError)
  })

  it('a file that was asked for must exist, even when defaults are allowed', () => {
    const dir = tempDir()
    expect(() => loadConfig({ cwd: dir, env: {}, path: 'nope.toml', allowMissing: true })).toThrow(
      /config file nope\.toml not found/,
    )
  })
})

describe('redact', () => {
  it('replaces every occurrence of every secret, longest first', () => {
    expect(redact('key=abc123 again abc123 and abc', ['abc', 'abc123'])).toBe('key=*** again *** and ***')
    expect(redact('nothing here', [''])).toBe('nothing here')
  })

  it('scrubs strings inside a value and keeps it valid JSON', () => {
    const value = { url: 'postgres://u:"pw@db', list: ['"pw', 1], n: 2 }
    const out = redactValue(value, ['"pw'])
    expect(out).toEqual({ url: 'postgres://u:***@db', list: ['***', 1], n: 2 })
    expect(JSON.parse(JSON.stringify(out))).toEqual(out)
  })
})

type SchemaNode = { description?: string; properties?: Record<string, SchemaNode>; [k: string]: unknown }

/** Every entry of every `properties` map outside `if` conditions, with its path. */
function allProperties(node: unknown, path = '', out: [string, SchemaNode][] = []): [string, SchemaNode][] {
  if (node === null || typeof node !== 'object') return out
  for (const [key, child] of Object.entries(node as Record<string, unknown>)) {
    if (key === 'if') continue
    if (key === 'properties') {
      for (const [name, prop] of Object.entries(child as Record<string, SchemaNode>)) {
        // `false` forbids a key (query_url off tier 2): nothing to describe.
        if ((prop as unknown) === false) continue
        out.push([`${path}.${name}`, prop])
        allProperties(prop, `${path}.${name}`, out)
      }
    } else {
      allProperties(child, path, out)
    }
  }
  return out
}

function allSchemaKeys(schema: unknown): string[] {
  return [...new Set(allProperties(schema).map(([p]) => p.split('.').pop()!))]
}

describe(`the config reference in ${CONFIG_DOC}`, () => {
  it('is committed exactly as the schema generates it (run `npm run schema`)', async () => {
    const { withReference, configReference } = await import('../../src/core/config/reference.js')
    const doc = readFileSync(join(repo, CONFIG_DOC), 'utf8')
    expect(doc).toContain(configReference())
    expect(withReference(doc)).toBe(doc)
  })
})

describe('store.schema', () => {
  it('is taken as written: a ${VAR} there is an error that says it is not expanded, naming the key', () => {
    const toml = '[store]\nkind = "postgres"\nurl = "${DB_URL}"\nschema = "${IL_SCHEMA}"\n'
    let problems: readonly string[] = []
    try {
      parseConfig(toml, { file: '/x/interlock.toml', env: { DB_URL: 'postgres://h/db', IL_SCHEMA: 'team_a' } })
    } catch (e) {
      problems = (e as { problems?: readonly string[] }).problems ?? []
    }
    expect(problems).toEqual([expect.stringMatching(/^store\.schema: must be a lower-case SQL identifier .*\(\$\{VAR\} is not expanded here\)$/)])
    const ok = parseConfig('[store]\nkind = "postgres"\nurl = "${DB_URL}"\nschema = "team_a"\n', { file: '/x/interlock.toml', env: { DB_URL: 'postgres://h/db' } })
    expect(ok.store).toMatchObject({ kind: 'postgres', schema: 'team_a' })
  })
})
