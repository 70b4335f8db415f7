/**
 * Everything that is not a side-effecting tool call passes through the proxy
 * unchanged, both ways: the real server-everything (progress, sampling,
 * elicitation, roots, resources, prompts, completions, logging) answers the
 * same through `interlock mcp-proxy` as straight to an SDK Client; and the
 * proxy over Streamable HTTP, and in front of a Streamable HTTP server.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, LoggingMessageNotificationSchema, ResourceListChangedNotificationSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { directClient, everythingOverHttp, httpClient, memoryLedger, memoryToml, proxyClient, proxyOverHttp, q, resultMeta, resultText, SERVERS, stdioServer } from '../helpers/mcp.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function scratch(toml: (dir: string) => string): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-through-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'interlock.toml'), toml(dir))
  return dir
}

async function until(ok: () => boolean, ms: number, why: string): Promise<void> {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error(why)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const CAPS = { sampling: {}, elicitation: {}, roots: { listChanged: true } }
const asked: string[] = []
/** The host's side of what the server asks: a model, a person, its roots. */
function host(client: Client): void {
  client.setRequestHandler(CreateMessageRequestSchema, async (r) => {
    asked.push('sampling')
    return { model: 'host-model', role: 'assistant', content: { type: 'text', text: `sampled: ${JSON.stringify(r.params.messages[0]?.content)}` } }
  })
  client.setRequestHandler(ElicitRequestSchema, async () => {
    asked.push('elicitation')
    return { action: 'decline' }
  })
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    asked.push('roots')
    return { roots: [{ uri: 'file:///srv/host-root', name: 'host root' }] }
  })
}

describe('in front of server-everything over stdio', () => {
  it('answers every request that changes nothing exactly as the server does, and mirrors its capabilities but tasks', async () => {
    const cwd = scratch(() => `[store]\npath = "journal.db"\n[targets.everything]\ntype = "mcp"\n${stdioServer(SERVERS.everything, ['stdio'])}`)
    const proxy = await proxyClient({ cwd, capabilities: CAPS, prepare: host })
    const direct = await directClient(SERVERS.everything, ['stdio'], { cwd, capabilities: CAPS, prepare: host })
    try {
      const { tasks: _tasks, ...withoutTasks } = direct.getServerCapabilities() ?? {}
      expect(proxy.client.getServerCapabilities()).toEqual(withoutTasks)
      expect(proxy.client.getServerVersion()).toEqual(direct.getServerVersion())
      expect(proxy.client.getInstructions()).toEqual(direct.getInstructions())
      const both = async <T>(ask: (c: Client) => Promise<T>) => expect(await ask(proxy.client)).toEqual(await ask(direct))
      await both((c) => c.listTools())
      await both((c) => c.listResources())
      await both((c) => c.listResourceTemplates())
      await both((c) => c.readResource({ uri: 'demo://resource/static/document/architecture.md' }).catch((e: Error) => e.message))
      await both((c) => c.listPrompts())
      await both((c) => c.getPrompt({ name: 'simple-prompt' }))
      await both((c) => c.getPrompt({ name: 'args-prompt', arguments: { city: 'Lyon', state: 'Rhône' } }))
      await both((c) => c.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } }))
      await both((c) => c.ping())
      await both((c) => c.setLoggingLevel('debug'))
      await both((c) => c.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } }))
    } finally {
      await direct.close()
      await proxy.close()
    }
  })

  it('passes progress, sampling, elicitation, roots and log messages through, and journals only the calls that change something', async () => {
    const cwd = scratch(() => `[store]\npath = "journal.db"\n[targets.everything]\ntype = "mcp"\n${stdioServer(SERVERS.everything, ['stdio'])}`)
    const logs: string[] = []
    const proxy = await proxyClient({
      cwd,
      capabilities: CAPS,
      prepare: (c) => {
        host(c)
        c.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void logs.push(String(n.params.level)))
      },
    })
    try {
      // A read tool with progress: every step reaches the client under its own token.
      const steps: number[] = []
      const long = await proxy.client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } }, undefined, { onprogress: (p) => void steps.push(p.progress) })
      expect(resultText(long)).toContain('Long running operation completed')
      // The last step's notice leaves the server right before the result; the SDK's Client drops a notice
      // that it reads together with the result (direct or not), so only the earlier steps are certain.
      expect(steps.slice(0, 3)).toEqual([1, 2, 3])

      // Roots: the server asked the client for them (at its start); a read tool shows what it got.
      const roots = await proxy.client.callTool({ name: 'get-roots-list', arguments: {} })
      expect(resultText(roots)).toContain('file:///srv/host-root')

      // A journaled call (tier 3 by its annotations) whose server asks the client for a model's answer.
      const sampled = await proxy.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello', maxTokens: 5 } })
      expect(resultText(sampled)).toContain('sampled:')
      expect(resultMeta(sampled)['interlock/state']).toBe('COMMITTED')
      const elicited = await proxy.client.callTool({ name: 'trigger-elicitation-request', arguments: {} })
      expect(resultText(elicited)).toContain('decline')
      expect(asked).toEqual(expect.arrayContaining(['roots', 'sampling', 'elicitation']))

      // Log messages the server sends once asked to (a journaled call), at the level the client set.
      await proxy.client.setLoggingLevel('debug')
      await proxy.client.callTool({ name: 'toggle-simulated-logging', arguments: {} })
      const end = Date.now() + 15_000
      while (logs.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 100))
      expect(logs.length).toBeGreaterThan(0)

      const list = await interlock(['outbox', 'list', '--json'], { cwd })
      const effects = (JSON.parse(list.stdout) as { effects: { action: string; state: string }[] }).effects
      expect(effects.map((e) => `${e.action} ${e.state}`).sort()).toEqual(['toggle-simulated-logging COMMITTED', 'trigger-elicitation-request COMMITTED', 'trigger-sampling-request COMMITTED'])
    } finally {
      await proxy.close()
    }
  })

  it('passes resource subscriptions and list_changed notifications through, both ways', async () => {
    const cwd = scratch(() => `[store]\npath = "journal.db"\n[targets.everything]\ntype = "mcp"\n${stdioServer(SERVERS.everything, ['stdio'])}`)
    const updated: string[] = []
    let listChanged = 0
    const proxy = await proxyClient({
      cwd,
      capabilities: CAPS,
      prepare: (c) => {
        c.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void updated.push(n.params.uri))
        c.setNotificationHandler(ResourceListChangedNotificationSchema, async () => void listChanged++)
      },
    })
    try {
      const uri = (await proxy.client.listResources()).resources[0]!.uri
      await proxy.client.subscribeResource({ uri })
      // The server sends an update for every URI this session subscribed to, at once and then every 5 s.
      await proxy.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} })
      await until(() => updated.includes(uri), 10_000, 'no notifications/resources/updated reached the client')
      await proxy.client.unsubscribeResource({ uri })
      const before = (await proxy.client.listResources()).resources.length
      // A tool that registers a resource for the session: the server says its resource list changed.
      const gz = await proxy.client.callTool({ name: 'gzip-file-as-resource', arguments: { name: 'hello.txt.gz', data: 'data:text/plain;base64,aGVsbG8=' } })
      expect(gz.isError ?? false, resultText(gz)).toBe(false)
      await until(() => listChanged > 0, 10_000, 'no notifications/resources/list_changed reached the client')
      expect((await proxy.client.listResources()).resources.length).toBe(before + 1)
    } finally {
      await proxy.close()
    }
  })

  it('a cancelled read reaches the server as a cancellation, and the session goes on', async () => {
    const cwd = scratch(() => `[store]\npath = "journal.db"\n[targets.everything]\ntype = "mcp"\n${stdioServer(SERVERS.everything, ['stdio'])}`)
    const proxy = await proxyClient({ cwd })
    try {
      const abort = new AbortController()
      const started = Date.now()
      const call = proxy.client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 20, steps: 20 } }, undefined, { signal: abort.signal })
      setTimeout(() => abort.abort('the user pressed stop'), 500)
      await expect(call).rejects.toThrow()
      expect(Date.now() - started).toBeLessThan(10_000)
      expect(resultText(await proxy.client.callTool({ name: 'echo', arguments: { message: 'still here' } }))).toContain('still here')
    } finally {
      await proxy.close()
    }
  })
})

describe('Streamable HTTP', () => {
  it('mcp-proxy --http serves each session its own thread, journals, and answers a retry from the journal', async () => {
    const cwd = scratch((dir) => memoryToml(dir, { extra: '[targets.memory.tools.create_entities]\ntier = 1\n' }))
    const proxy = await proxyOverHttp({ cwd, args: ['--insecure-no-auth'] })
    try {
      const client = await httpClient(proxy.url)
      const call = { name: 'create_entities', arguments: { entities: [{ name: 'carol', entityType: 'person', observations: [] }] } }
      const first = await client.callTool(call)
      expect(first.isError, resultText(first)).toBeFalsy()
      writeFileSync(join(cwd, 'memory.jsonl'), '')
      const again = await client.callTool(call)
      expect(resultMeta(again)).toMatchObject({ 'interlock/effect': resultMeta(first)['interlock/effect'], 'interlock/replayed': true })
      expect(memoryLedger(join(cwd, 'memory.jsonl'))).toEqual([])
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('read_graph')
      await client.close()
      // Another session is another thread: the same call is a new effect.
      const other = await httpClient(proxy.url)
      const fresh = await other.callTool(call)
      expect(resultMeta(fresh)['interlock/effect']).not.toBe(resultMeta(first)['interlock/effect'])
      expect(memoryLedger(join(cwd, 'memory.jsonl'))).toHaveLength(1)
      await other.close()
    } finally {
      await proxy.close()
    }
    expect(proxy.child.exitCode).toBe(0)
  })

  it('in front of a server over Streamable HTTP: the same tools, read calls passed through, writes journaled', async () => {
    const upstream = await everythingOverHttp()
    try {
      const cwd = scratch(() => `[store]\npath = "journal.db"\n[targets.everything]\ntype = "mcp"\nurl = ${q(upstream.url)}\n`)
      const proxy = await proxyClient({ cwd, capabilities: CAPS, prepare: host })
      const direct = await httpClient(upstream.url, { capabilities: CAPS, prepare: host })
      try {
        expect((await proxy.client.listTools()).tools).toEqual((await direct.listTools()).tools)
        expect(resultText(await proxy.client.callTool({ name: 'echo', arguments: { message: 'over http' } }))).toContain('over http')
        const sampled = await proxy.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 5 } })
        expect(resultMeta(sampled)['interlock/state']).toBe('COMMITTED')
        expect(resultText(sampled)).toContain('sampled:')
      } finally {
        await direct.close()
        await proxy.close()
      }
    } finally {
      await upstream.close()
    }
  })
})
