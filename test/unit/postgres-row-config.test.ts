/**
 * `[targets.x] type = "postgres_row"` from TOML to a target: schema problems
 * named by key path, defaults, the URL kept as a secret, the commented example
 * valid once uncommented, and the target's own cross-key checks. No database:
 * the table is checked at first use (integration/targets/postgres-row.test.ts).
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { ConfigError } from '../../src/core/errors.js'
import { PostgresRowTarget } from '../../src/core/targets/postgres-row/index.js'
import { createTarget } from '../../src/core/targets/registry.js'

const repo = join(dirname(fileURLToPath(import.meta.url)), '../..')
const URL_WITH_PASSWORD = 'postgres://shop:s3cret-pw@db.example:5432/shop'
const env = { ORDERS_DATABASE_URL: URL_WITH_PASSWORD }

function load(toml: string) {
  return parseConfig(toml, { file: join(repo, 'interlock.toml'), env })
}

function problemsOf(toml: string): string[] {
  try {
    load(toml)
  } catch (e) {
    if (e instanceof ConfigError) return [...e.problems]
    throw e
  }
  return []
}

const MINIMAL = `[targets.orders]
type = "postgres_row"
url = "\${ORDERS_DATABASE_URL}"
table = "orders"
`

describe('postgres_row config', () => {
  it('applies defaults and keeps the resolved URL as a secret', () => {
    const config = load(MINIMAL)
    expect(config.targets.orders).toEqual({
      type: 'postgres_row',
      url: URL_WITH_PASSWORD,
      table: 'orders',
      effectIdColumn: 'effect_id',
      columns: {},
      premiseParams: [],
      compensateParams: [],
      statementTimeoutMs: 5000,
      timeoutMs: 10000,
      connectTimeoutMs: 3000,
    })
    expect(config.secrets).toEqual([URL_WITH_PASSWORD])
  })

  it('the commented example in interlock.toml.example is valid once uncommented', () => {
    const example = readFileSync(join(repo, 'interlock.toml.example'), 'utf8')
    const start = example.indexOf('# [targets.orders]\n')
    const end = example.indexOf('\n\n', start)
    const block = example
      .slice(start, end)
      .split('\n')
      .filter((line) => !line.startsWith('# # ') && line !== '#')
      .map((line) => line.replace(/^# /, ''))
      .join('\n')
    const target = load(block).targets.orders
    expect(target).toMatchObject({
      type: 'postgres_row',
      table: 'shop.orders',
      columns: { order_id: 'order_id', account_id: 'account_id', amount: 'amount' },
      premiseParams: ['account_id'],
      compensateParams: ['effect_id'],
    })
    const made = createTarget('orders', target!, { secrets: [URL_WITH_PASSWORD] })
    expect(made).toBeInstanceOf(PostgresRowTarget)
    expect(made.tier).toBe(2)
    expect(typeof made.compensation).toBe('function')
    // Registration never connects: the where-string names host and database, never the password.
    expect((made as PostgresRowTarget).where).toBe('target orders: table shop.orders in database shop on db.example:5432')
  })

  it('names each schema problem by its key path', () => {
    const problems = problemsOf(`[targets.orders]
type = "postgres_row"
url = "mysql://x"
table = "Orders"
effect_id_column = "Effect-Id"
premise_params = ["account_id"]
colour = "red"
[targets.orders.columns]
amount = "Amount"
`)
    expect(problems).toEqual(
      expect.arrayContaining([
        'targets.orders.url: must be a postgres:// or postgresql:// URL, or a ${VAR} reference',
        'targets.orders.table: must be a lower-case table name, optionally schema-qualified ("orders" or "shop.orders")',
        'targets.orders.effect_id_column: must be a lower-case SQL identifier (letters, digits, _; at most 63 characters)',
        'targets.orders.columns.amount: must be a lower-case SQL identifier (letters, digits, _; at most 63 characters)',
        'targets.orders.colour: unknown key',
        expect.stringMatching(/^targets\.orders: .*premise_sql.*premise_params/),
      ]),
    )
    expect(problemsOf(`[targets.orders]\ntype = "postgres_row"\nurl = "postgres://x/y"\n`)).toEqual(['targets.orders.table: required key is missing'])
  })

  it('cross-key checks run when the target is made, naming keys, without the URL', () => {
    const config = load(`${MINIMAL}premise_sql = "SELECT balance FROM accounts WHERE id = $1"
statement_timeout_ms = 8000
timeout_ms = 8000
`)
    let err: unknown
    try {
      createTarget('orders', config.targets.orders!, { secrets: config.secrets })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(ConfigError)
    expect((err as ConfigError).problems).toEqual([
      'targets.orders.premise_params: premise_sql uses $1..$1 but 0 name(s) are given',
      'targets.orders.timeout_ms: must be above statement_timeout_ms (8000) so PostgreSQL\'s own, definite timeout answers first',
    ])
    expect(JSON.stringify((err as ConfigError).toJSON()) + (err as ConfigError).problems.join()).not.toContain('s3cret')
  })

  it('without compensate_sql the target is not compensable and says why', () => {
    const t = createTarget('orders', load(MINIMAL).targets.orders!)
    expect(t.compensation).toBeUndefined()
    expect(t.notCompensable).toBe('target orders has no compensate_sql, so its rows cannot be taken back through Interlock')
  })
})
