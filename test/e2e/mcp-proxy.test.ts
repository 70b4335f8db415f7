/**
 * `interlock mcp-proxy` as an agent host runs it: the SDK's Client spawns the
 * built binary over stdio, the binary spawns a real MCP server from npm
 * (server-memory, whose JSONL file is the ledger of what was applied;
 * server-filesystem in a temp folder). Journaled calls are checked in the
 * journal (`interlock outbox list --json`) and in the server's own record.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { directClient, memoryLedger, proxyClient, q, SERVERS, stdioServer, type ProxyClient } from '../helpers/mcp.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
const clients: ProxyClient[] = []
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()))
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function scratch(): string {
  const d = mkdtempSync(join(tmpdir(), 'interlock-mcp-'))
  dirs.push(d)
  return d
}

/** A folder with interlock.toml fronting server-memory (its ledger memory.jsonl), plus `extra` TOML. */
function memoryConfig(extra = '', env: Record<string, string> = {}): string {
  const dir = scratch()
  const envLine = Object.entries({ MEMORY_FILE_PATH: join(dir, 'memory.jsonl'), ...env }).map(([k, v]) => `${k} = ${q(v)}`).join(', ')
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]\npath = "journal.db"\n[gate]\nmax_attempts = 2\nbackoff_ms = 10\n[targets.memory]\ntype = "mcp"\n${stdioServer(SERVERS.memory)}env = { ${envLine} }\n${extra}`,
  )
  return dir
}

/** A folder with interlock.toml fronting server-filesystem over its `files` subfolder, plus `extra` TOML. */
function filesConfig(extra = ''): { dir: string; files: string } {
  const dir = scratch()
  const files = join(dir, 'files')
  mkdirSync(files)
  writeFileSync(join(dir, 'interlock.toml'), `[store]\npath = "journal.db"\n[targets.fs]\ntype = "mcp"\n${stdioServer(SERVERS.filesystem, [files])}${extra}`)
  return { dir, files }
}

async function open(cwd: string, args: string[] = [], env: Record<string, string> = {}): Promise<ProxyClient> {
  const c = await proxyClient({ cwd, args, env })
  clients.push(c)
  return c
}

async function journal(cwd: string, env: Record<string, string> = {}): Promise<{ effectId: string; state: string; action: string; thread: string; tier?: number }[]> {
  const run = await interlock(['outbox', 'list', '--json'], { cwd, env })
  expect(run.code, run.stderr).toBe(0)
  return (JSON.parse(run.stdout) as { effects: { effectId: string; state: string; action: string; thread: string }[] }).effects
}

const text = (r: unknown) => ((r as CallToolResult).content as { type: string; text?: string }[]).map((c) => c.text ?? '').join('\n')
const meta = (r: unknown) => ((r as CallToolResult)._meta ?? {}) as Record<string, unknown>
const alice = { entities: [{ name: 'alice', entityType: 'person', observations: ['likes tea'] }] }

describe('mcp-proxy in front of server-memory', () => {
  it('mirrors the tool list as the server gives it, and journals only the calls that change something', async () => {
    const cwd = memoryConfig('[targets.memory.tools.create_entities]\ntier = 1\n')
    const proxy = await open(cwd)
    const direct = await directClient(SERVERS.memory, [], { cwd, env: { MEMORY_FILE_PATH: join(cwd, 'direct.jsonl') } })
    try {
      // The upstream's schemas pass through untouched.
      expect((await proxy.client.listTools()).tools).toEqual((await direct.listTools()).tools)
      expect(proxy.client.getServerVersion()).toEqual(direct.getServerVersion())
      expect(proxy.client.getServerCapabilities()).toEqual(direct.getServerCapabilities())
    } finally {
      await direct.close()
    }
    const created = await proxy.client.callTool({ name: 'create_entities', arguments: alice })
    expect(created.isError).toBeFalsy()
    expect(created.structuredContent).toEqual(alice)
    const read = await proxy.client.callTool({ name: 'read_graph', arguments: {} })
    expect(read.structuredContent).toEqual({ entities: alice.entities, relations: [] })
    expect(meta(read)['interlock/effect']).toBeUndefined()

    const effects = await journal(cwd)
    expect(effects.map((e) => [e.action, e.state])).toEqual([['create_entities', 'COMMITTED']])
    expect(effects[0]!.effectId).toBe(meta(created)['interlock/effect'])
    expect(memoryLedger(join(cwd, 'memory.jsonl'))).toEqual([{ type: 'entity', name: 'alice', entityType: 'person', observations: ['likes tea'] }])
  })

  it('a call made again is answered from the journal: the server is not called twice', async () => {
    const cwd = memoryConfig()
    const proxy = await open(cwd)
    const first = await proxy.client.callTool({ name: 'create_entities', arguments: alice })
    // Deleted behind the proxy's back: a second application would bring alice back.
    writeFileSync(join(cwd, 'memory.jsonl'), '')
    const again = await proxy.client.callTool({ name: 'create_entities', arguments: alice })
    expect(again.structuredContent).toEqual(first.structuredContent)
    expect(meta(again)).toMatchObject({ 'interlock/effect': meta(first)['interlock/effect'], 'interlock/state': 'COMMITTED', 'interlock/replayed': true })
    expect(memoryLedger(join(cwd, 'memory.jsonl'))).toEqual([])
  })

  it('a host that restarts and names its thread gets the same effects; a new session without one is a new thread', async () => {
    const cwd = memoryConfig()
    const call = { name: 'create_entities', arguments: alice, _meta: { 'interlock/thread': 'conversation-42' } }
    let proxy = await open(cwd)
    const first = await proxy.client.callTool(call)
    await proxy.close()
    writeFileSync(join(cwd, 'memory.jsonl'), '')
    proxy = await open(cwd)
    const replayed = await proxy.client.callTool(call)
    expect(meta(replayed)).toMatchObject({ 'interlock/effect': meta(first)['interlock/effect'], 'interlock/replayed': true })
    expect(memoryLedger(join(cwd, 'memory.jsonl'))).toEqual([])
    // No thread named: this session's own journal, so a new effect, applied.
    const fresh = await proxy.client.callTool({ name: 'create_entities', arguments: alice })
    expect(meta(fresh)['interlock/effect']).not.toBe(meta(first)['interlock/effect'])
    expect(memoryLedger(join(cwd, 'memory.jsonl'))).toHaveLength(1)
    const threads = new Set((await journal(cwd)).map((e) => e.thread))
    expect(threads.has('conversation-42')).toBe(true)
    expect([...threads].some((t) => t.startsWith('mcp/memory/'))).toBe(true)
  })

  it('passes the tool\'s own error on and journals it FAILED, at any tier', async () => {
    const cwd = memoryConfig()
    const proxy = await open(cwd)
    const r = await proxy.client.callTool({ name: 'add_observations', arguments: { observations: [{ entityName: 'nobody', contents: ['x'] }] } })
    expect(r.isError).toBe(true)
    expect(text(r)).toContain('Entity with name nobody not found')
    expect(meta(r)['interlock/state']).toBe('FAILED')
    expect((await journal(cwd)).map((e) => e.state)).toEqual(['FAILED'])
    // Asked again: FAILED means nothing was done, so it is a new call, refused again by the server itself.
    const again = await proxy.client.callTool({ name: 'add_observations', arguments: { observations: [{ entityName: 'nobody', contents: ['x'] }] } })
    expect(text(again)).toContain('Entity with name nobody not found')
    expect((await journal(cwd)).map((e) => e.state)).toEqual(['FAILED', 'FAILED'])
  })

  it('refuses a call whose arguments hold a secret of interlock.toml, journaling nothing', async () => {
    const secret = 'mcp-secret-0123456789'
    const cwd = memoryConfig('', { API_TOKEN: '${MCP_TOKEN}' })
    const proxy = await open(cwd, [], { MCP_TOKEN: secret })
    const r = await proxy.client.callTool({ name: 'create_entities', arguments: { entities: [{ name: secret, entityType: 'x', observations: [] }] } })
    expect(r.isError).toBe(true)
    expect(text(r)).toMatch(/holds a secret .* refused, nothing was journaled/)
    expect(text(r)).not.toContain(secret)
    expect(await journal(cwd, { MCP_TOKEN: secret })).toEqual([])
    expect(memoryLedger(join(cwd, 'memory.jsonl'))).toEqual([])
    expect(proxy.stderr()).not.toContain(secret)
  })
})

describe('a stable thread: a host that restarts and repeats a call', () => {
  it('--thread: the second proxy process answers the same call from the journal, applied once', async () => {
    const cwd = memoryConfig()
    let proxy = await open(cwd, ['--thread', 'notes-assistant'])
    const first = await proxy.client.callTool({ name: 'create_entities', arguments: alice })
    await proxy.close()
    // Deleted behind the proxy's back: applied again, alice would be back.
    writeFileSync(join(cwd, 'memory.jsonl'), '')
    proxy = await open(cwd, ['--thread', 'notes-assistant'])
    const again = await proxy.client.callTool({ name: 'create_entities', arguments: alice })
    expect(meta(again)).toMatchObject({ 'interlock/effect': meta(first)['interlock/effect'], 'interlock/state': 'COMMITTED', 'interlock/replayed': true })
    expect(again.structuredContent).toEqual(alice)
    expect(memoryLedger(join(cwd, 'memory.jsonl'))).toEqual([])
    expect((await journal(cwd)).map((e) => e.thread)).toEqual(['notes-assistant'])
  })

  it('thread = "per-client": one thread per caller and client name, across sessions', async () => {
    const cwd = memoryConfig('thread = "per-client"\n')
    let proxy = await open(cwd)
    const first = await proxy.client.callTool({ name: 'create_entities', arguments: alice })
    await proxy.close()
    proxy = await open(cwd)
    const again = await proxy.client.callTool({ name: 'create_entities', arguments: alice })
    expect(meta(again)).toMatchObject({ 'interlock/effect': meta(first)['interlock/effect'], 'interlock/replayed': true })
    const [effect] = await journal(cwd)
    // mcp/<target>/<principal>/<the client's name in initialize>
    expect(effect!.thread).toMatch(/^mcp\/memory\/user:[^/]+\/interlock-test-host$/)
  })

  it('--thread that is no thread name: exit 2, naming the flag', async () => {
    const run = await interlock(['mcp-proxy', '--thread', 'my notes'], { cwd: memoryConfig() })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--thread "my notes" is not a thread name')
  })
})

describe('repeats and retries (dedupe)', () => {
  const append = (line: string) => ({ name: 'edit_file', arguments: { path: 'list.txt', edits: [{ oldText: 'END', newText: `${line}\nEND` }] } })
  const lines = (files: string) => readFileSync(join(files, 'list.txt'), 'utf8').split('\n')

  it('default ("window"): the same call again soon after is a retry, answered from the journal, applied once', async () => {
    const { dir, files } = filesConfig()
    writeFileSync(join(files, 'list.txt'), 'END')
    const proxy = await open(dir)
    const first = await proxy.client.callTool(append('milk'))
    const second = await proxy.client.callTool(append('milk'))
    expect(first.isError).toBeFalsy()
    expect(meta(second)).toMatchObject({ 'interlock/effect': meta(first)['interlock/effect'], 'interlock/replayed': true })
    expect(lines(files)).toEqual(['milk', 'END'])
  })

  it('"window": past dedupe_window the same call is a new one, applied again', async () => {
    const { dir, files } = filesConfig('[targets.fs.tools.edit_file]\ntier = 3\ndedupe_window = "1ms"\n')
    writeFileSync(join(files, 'list.txt'), 'END')
    const proxy = await open(dir)
    const first = await proxy.client.callTool(append('milk'))
    await new Promise((r) => setTimeout(r, 20))
    const second = await proxy.client.callTool(append('milk'))
    expect(meta(second)['interlock/effect']).not.toBe(meta(first)['interlock/effect'])
    expect(meta(second)['interlock/replayed']).toBeUndefined()
    expect(lines(files)).toEqual(['milk', 'milk', 'END'])
  })

  it('"marked": the same call twice on purpose is applied twice; one marked a retry is not', async () => {
    const { dir, files } = filesConfig('[targets.fs.tools.edit_file]\ntier = 3\ndedupe = "marked"\n')
    writeFileSync(join(files, 'list.txt'), 'END')
    const proxy = await open(dir)
    await proxy.client.callTool(append('milk'))
    const second = await proxy.client.callTool(append('milk'))
    const retry = await proxy.client.callTool({ ...append('milk'), _meta: { 'interlock/retry': true } })
    expect(lines(files)).toEqual(['milk', 'milk', 'END'])
    expect(meta(retry)).toMatchObject({ 'interlock/effect': meta(second)['interlock/effect'], 'interlock/replayed': true })
    expect((await journal(dir)).map((e) => e.state)).toEqual(['COMMITTED', 'COMMITTED'])
  })

  it('"always": the same call is the same effect however late; a caller key makes another', async () => {
    const { dir, files } = filesConfig('[targets.fs.tools.edit_file]\ntier = 3\ndedupe = "always"\n')
    writeFileSync(join(files, 'list.txt'), 'END')
    const proxy = await open(dir)
    await proxy.client.callTool(append('milk'))
    await new Promise((r) => setTimeout(r, 20))
    await proxy.client.callTool(append('milk'))
    await proxy.client.callTool({ ...append('milk'), _meta: { 'interlock/key': 'second-carton' } })
    await proxy.client.callTool({ ...append('milk'), _meta: { 'interlock/key': 'second-carton' } })
    expect(lines(files)).toEqual(['milk', 'milk', 'END'])
  })

  it('two identical calls at once are one effect: the second joins the first', async () => {
    const { dir, files } = filesConfig('[targets.fs.tools.edit_file]\ntier = 3\ndedupe = "marked"\n')
    writeFileSync(join(files, 'list.txt'), 'END')
    const proxy = await open(dir)
    const [a, b] = await Promise.all([proxy.client.callTool(append('eggs')), proxy.client.callTool(append('eggs'))])
    expect(meta(a)['interlock/effect']).toBe(meta(b)['interlock/effect'])
    expect(lines(files)).toEqual(['eggs', 'END'])
  })
})

describe('premises: a write rests on what the agent read', () => {
  const restsOn = '[targets.fs.tools.edit_file]\ntier = 3\nrests_on = [{ tool = "read_text_file", args = { path = "{args.path}" } }]\n'
  const edit = { name: 'edit_file', arguments: { path: 'notes.txt', edits: [{ oldText: 'draft', newText: 'final' }] } }

  it('the file changed on disk between the agent\'s read and its edit: REJECTED, the file untouched', async () => {
    const { dir, files } = filesConfig(restsOn)
    writeFileSync(join(files, 'notes.txt'), 'a draft\n')
    const proxy = await open(dir)
    const read = await proxy.client.callTool({ name: 'read_text_file', arguments: { path: 'notes.txt' } })
    expect(text(read)).toBe('a draft\n')
    writeFileSync(join(files, 'notes.txt'), 'a draft, edited by someone else\n')
    const r = await proxy.client.callTool(edit)
    expect(r.isError).toBe(true)
    expect(meta(r)['interlock/state']).toBe('REJECTED')
    expect(text(r)).toMatch(/Rejected, nothing was sent: .*read_text_file \{"path":"notes.txt"\} answers differently/s)
    expect(readFileSync(join(files, 'notes.txt'), 'utf8')).toBe('a draft, edited by someone else\n')
    expect((await journal(dir)).map((e) => e.state)).toEqual(['REJECTED'])
    // Read again, decided again: a new call, and it goes.
    await proxy.client.callTool({ name: 'read_text_file', arguments: { path: 'notes.txt' } })
    const again = await proxy.client.callTool(edit)
    expect(again.isError).toBeFalsy()
    expect(readFileSync(join(files, 'notes.txt'), 'utf8')).toBe('a final, edited by someone else\n')
  })

  it('unchanged since the agent read it: the edit goes', async () => {
    const { dir, files } = filesConfig(restsOn)
    writeFileSync(join(files, 'notes.txt'), 'a draft\n')
    const proxy = await open(dir)
    await proxy.client.callTool({ name: 'read_text_file', arguments: { path: 'notes.txt' } })
    const r = await proxy.client.callTool(edit)
    expect(r.isError).toBeFalsy()
    expect(readFileSync(join(files, 'notes.txt'), 'utf8')).toBe('a final\n')
  })
})
