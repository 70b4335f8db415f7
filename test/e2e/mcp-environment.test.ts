/**
 * A stdio server gets only HOME, LOGNAME, PATH, SHELL, TERM and USER of
 * Interlock's environment, plus the target's `env` and `env_pass`. One that
 * needs more to start (here test/helpers/needs-env.mjs, which never answers
 * initialize without CORP_CA, as a server behind a corporate CA or proxy
 * hangs on its first call out) makes `interlock mcp-proxy` exit 3 and
 * `interlock check` fail its row, each naming the variables the server was
 * given (names, never values), the keys that add to them, and its start time.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { NEEDS_ENV, proxyClient, q, SERVERS } from '../helpers/mcp.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const SHOWN_NEVER = 'value-that-is-never-shown'

/** interlock.toml fronting server-memory behind needs-env.mjs, which starts it only with CORP_CA set. */
function scene(target = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-env-'))
  dirs.push(dir)
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]\npath = "journal.db"\n[targets.memory]\ntype = "mcp"\ncommand = ${q(process.execPath)}\nargs = [${[NEEDS_ENV, 'CORP_CA', SERVERS.memory].map(q).join(', ')}]\n` +
      `env = { MEMORY_FILE_PATH = ${q(join(dir, 'memory.jsonl'))}, API_LABEL = ${q(SHOWN_NEVER)} }\n${target}`,
  )
  return dir
}

interface Row {
  id: string
  status: string
  detail: string
  fix?: string
}

async function reachable(cwd: string, timeout: string): Promise<Row> {
  const run = await interlock(['check', '--only', 'targets', '--json', '--timeout', timeout], { cwd })
  expect(run.code, run.stderr).toBe(1)
  return (JSON.parse(run.stdout) as { checks: Row[] }).checks.find((r) => r.id === 'targets.memory.reachable')!
}

describe('a stdio server that needs a variable it was not given', () => {
  it('mcp-proxy exits 3 naming the variables the server had, the keys that add to them, and its start time', async () => {
    const cwd = scene('connect_timeout_ms = 1500\n')
    const run = await interlock(['mcp-proxy'], { cwd })
    expect(run.code, run.stderr).toBe(3)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain('(E_CONFIG): target memory could not be started: no answer to initialize within 1500 ms')
    // HOME and PATH are all the test gives the proxy of the six defaults; then the target's env.
    expect(run.stderr).toContain('its environment held HOME, PATH, MEMORY_FILE_PATH, API_LABEL: of Interlock\'s own environment a server gets only HOME, LOGNAME, PATH, SHELL, TERM, USER, plus what targets.memory.env sets and targets.memory.env_pass names')
    expect(run.stderr).toContain('env = { NODE_EXTRA_CA_CERTS = "${NODE_EXTRA_CA_CERTS}" }')
    expect(run.stderr).toContain('connect_timeout_ms (now 1500 ms)')
    expect(run.stderr).not.toContain(SHOWN_NEVER)
    expect(run.stderr).not.toContain(join(cwd, 'memory.jsonl'))
  })

  it('check fails the row with the same words, whether connect_timeout_ms or its own --timeout runs out first', async () => {
    const cwd = scene('connect_timeout_ms = 1500\n')
    const row = await reachable(cwd, '60000')
    expect(row.status).toBe('fail')
    expect(row.detail).toContain('its environment held HOME, PATH, MEMORY_FILE_PATH, API_LABEL')
    expect(row.fix).toContain('targets.memory.env')
    expect(row.fix).toContain('env_pass = ["HTTPS_PROXY", "NO_PROXY"]')
    expect(row.fix).toContain('connect_timeout_ms (now 1500 ms)')
    expect(row.fix).not.toMatch(/DNS|firewall/)

    const slow = scene('connect_timeout_ms = 30000\n')
    const cut = await reachable(slow, '1500')
    expect(cut.status).toBe('fail')
    expect(cut.detail).toContain('no answer within 1500 ms')
    expect(cut.fix).toContain('targets.memory.env')
    expect(cut.fix).toContain('connect_timeout_ms (now 30000 ms)')
    expect(cut.fix).not.toMatch(/DNS|firewall/)
  })

  it('env_pass gives it the variable from Interlock\'s environment: it starts, and its tools are served', async () => {
    const cwd = scene('env_pass = ["CORP_CA", "NOT_SET_ANYWHERE"]\n')
    const proxy = await proxyClient({ cwd, env: { CORP_CA: '/etc/ssl/corp.pem' } })
    try {
      expect((await proxy.client.listTools()).tools.map((t) => t.name)).toContain('create_entities')
      const r = await proxy.client.callTool({ name: 'create_entities', arguments: { entities: [{ name: 'dora', entityType: 'person', observations: [] }] } })
      expect(r.isError).toBeFalsy()
    } finally {
      await proxy.close()
    }
  })
})
