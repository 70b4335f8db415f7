/**
 * `notary = "<url>"` on a target that cannot carry it (docs/notary.md,
 * "Which targets take a notary"): refused at load, naming the file, the
 * target and the key, with a hint saying which targets take it and why.
 */
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { ConfigError, ExitCode } from '../../src/core/errors.js'

const FILE = '/srv/agent/interlock.toml'
const ENV = { T: 'token-value-0123', K: 'key-value-0123456', S: 'secret-value-0123' }

/** Each target type other than http, as a minimal valid table. */
const TABLES: Record<string, string> = {
  stripe: 'type = "stripe"\napi_key = "${K}"',
  sendgrid: 'type = "sendgrid"\napi_key = "${K}"',
  slack: 'type = "slack"\ntoken = "${T}"',
  github: 'type = "github"\ntoken = "${T}"\nowner = "acme"\nrepo = "shop"',
  s3: 'type = "s3"\nbucket = "acme-bucket"\nregion = "eu-west-1"\naccess_key_id = "${K}"\nsecret_access_key = "${S}"',
  postgres_row: 'type = "postgres_row"\nurl = "postgres://db.example/shop"\ntable = "orders"',
  repo: 'type = "repo"\npath = "repo"',
  mcp: 'type = "mcp"\ncommand = "mcp-server"',
}

function refusal(text: string): ConfigError {
  try {
    parseConfig(text, { file: FILE, env: ENV })
  } catch (e) {
    if (e instanceof ConfigError) return e
    throw e
  }
  throw new Error('the config was accepted')
}

describe('notary on a target type that cannot take it', () => {
  it.each(Object.keys(TABLES))('a %s target without notary loads (the table itself is valid)', (type) => {
    expect(parseConfig(`[targets.t]\n${TABLES[type]}\n`, { file: FILE, env: ENV }).targets.t!.type).toBe(type)
  })

  it.each(Object.keys(TABLES))('a %s target with notary is refused at load: the file, the target, the key, and which targets take it', (type) => {
    const e = refusal(`[targets.t]\n${TABLES[type]}\nnotary = "http://127.0.0.1:7311"\n`)
    expect(e.exitCode).toBe(ExitCode.CONFIG)
    expect(e.message).toContain(FILE)
    expect(e.problems).toEqual([`targets.t.notary: not taken by a ${type} target: only an http target with tier = 3 takes notary (its service records performed at the notary itself)`])
    expect(e.hint).toContain('Remove notary (and notary_services) from [targets.t].')
    expect(e.hint).toContain('`notary` is taken only by an http target with tier = 3')
    expect(e.hint).toContain(type)
    expect(e.context).toEqual({ file: FILE })
  })

  it('notary_services alone is refused the same way, and every such target is named in one hint beside the other problems', () => {
    const e = refusal(
      `[targets.pay]\n${TABLES.stripe}\nnotary_services = { svc = "ed25519:x" }\n\n[targets.rows]\n${TABLES.postgres_row}\nnotary = "http://127.0.0.1:7311"\n\n[targets.hook]\ntype = "http"\ntier = 3\nurl = "http://127.0.0.1:1/x"\nbogus = 1\n`,
    )
    expect(e.problems).toContain('targets.pay.notary_services: not taken by a stripe target: only an http target with tier = 3 takes notary (its service records performed at the notary itself)')
    expect(e.problems).toContain('targets.rows.notary: not taken by a postgres_row target: only an http target with tier = 3 takes notary (its service records performed at the notary itself)')
    expect(e.problems).toContain('targets.hook.bogus: unknown key')
    expect(e.hint).toContain('from [targets.pay], [targets.rows].')
  })

  it('a misspelt key keeps the plain hint', () => {
    const e = refusal(`[targets.pay]\n${TABLES.stripe}\nnotry = "x"\n`)
    expect(e.problems).toEqual(['targets.pay.notry: unknown key'])
    expect(e.hint).not.toContain('notary')
  })
})
