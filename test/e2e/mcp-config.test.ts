/**
 * A wrong [targets.<name>] of type "mcp": `interlock mcp-proxy` refuses to
 * start (exit 3) naming the key path, and `interlock check` fails the row of
 * that key path; a right one lists every tool of the real server with the
 * tier it gets and why.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { q, SERVERS, stdioServer } from '../helpers/mcp.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function withConfig(target: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-config-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'interlock.toml'), `[store]\npath = "journal.db"\n[targets.memory]\ntype = "mcp"\n${target}`)
  return dir
}

const memory = `${stdioServer(SERVERS.memory)}env = { MEMORY_FILE_PATH = ${q(join(tmpdir(), 'interlock-mcp-config-unused.jsonl'))} }\n`

interface Row {
  id: string
  status: string
  detail: string
}

async function checkRows(cwd: string): Promise<{ code: number | null; rows: Row[] }> {
  // A generous probe timeout: starting node and the server is slow on a busy machine.
  const run = await interlock(['check', '--only', 'targets', '--json', '--timeout', '60000'], { cwd })
  return { code: run.code, rows: (JSON.parse(run.stdout) as { checks: Row[] }).checks }
}

describe('a wrong mcp target: mcp-proxy and check exit 3, naming the key', () => {
  it('a declared tool the server does not have', async () => {
    const cwd = withConfig(`${memory}[targets.memory.tools.create_entity]\ntier = 1\n[targets.memory.tools.add_observations]\ntier = 2\nquery = { tool = "find_nodes", args = { query = "{args.observations.0.entityName}" }, found = "x" }\n`)
    const proxy = await interlock(['mcp-proxy'], { cwd })
    expect(proxy.code).toBe(3)
    expect(proxy.stdout).toBe('')
    expect(proxy.stderr).toContain('targets.memory.tools.create_entity: the server has no tool "create_entity"')
    expect(proxy.stderr).toContain('targets.memory.tools.add_observations.query.tool: the server has no tool "find_nodes"')
    const { code, rows } = await checkRows(cwd)
    expect(code).toBe(3)
    const failing = rows.filter((r) => r.status === 'fail').map((r) => r.id)
    expect(failing).toEqual(expect.arrayContaining(['targets.memory.tools.create_entity', 'targets.memory.tools.add_observations.query.tool']))
  })

  it('a tier that is not 1, 2, 3 or "read"', async () => {
    const cwd = withConfig(`${memory}[targets.memory.tools.create_entities]\ntier = 4\n`)
    const proxy = await interlock(['mcp-proxy'], { cwd })
    expect(proxy.code).toBe(3)
    expect(proxy.stderr).toContain('targets.memory.tools.create_entities.tier')
    const { code, rows } = await checkRows(cwd)
    expect(code).toBe(3)
    expect(rows.filter((r) => r.status === 'fail').map((r) => r.detail).join('\n')).toContain('targets.memory.tools.create_entities.tier')
  })

  it('neither command nor url', async () => {
    const cwd = withConfig('timeout_ms = 1000\n')
    const proxy = await interlock(['mcp-proxy'], { cwd })
    expect(proxy.code).toBe(3)
    expect(proxy.stderr).toContain('targets.memory.command: required key is missing')
    const { code, rows } = await checkRows(cwd)
    expect(code).toBe(3)
    expect(rows.filter((r) => r.status === 'fail').map((r) => r.detail).join('\n')).toContain('targets.memory.command')
  })

  it('a command that does not start an MCP server', async () => {
    const cwd = withConfig(`command = ${q(process.execPath)}\nargs = ["-e", "process.exit(0)"]\nconnect_timeout_ms = 5000\n`)
    const proxy = await interlock(['mcp-proxy'], { cwd })
    expect(proxy.code).toBe(3)
    expect(proxy.stderr).toContain('target memory could not be started')
  })
})

describe('interlock check on a right mcp target', () => {
  it('lists every tool of the server with its tier and why', async () => {
    const cwd = withConfig(`${memory}[targets.memory.tools.create_entities]\ntier = 1\n`)
    const { code, rows } = await checkRows(cwd)
    expect(code, JSON.stringify(rows, null, 1)).toBe(0)
    const detail = (tool: string) => rows.find((r) => r.id === `targets.memory.tools.${tool}`)?.detail
    expect(detail('create_entities')).toBe('tier 1: declared in interlock.toml')
    expect(detail('read_graph')).toBe('read (forwarded, not journaled): annotations: readOnlyHint')
    expect(detail('delete_entities')).toMatch(/^tier 1: annotations: idempotentHint/)
    expect(detail('create_relations')).toMatch(/^tier 3: annotations: neither readOnlyHint nor idempotentHint/)
    expect(rows.filter((r) => r.id.startsWith('targets.memory.tools.'))).toHaveLength(9)
  })
})
