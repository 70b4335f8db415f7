/**
 * A tool that declares an outputSchema (every tool of server-memory does)
 * must answer structuredContent unless its result is an error, and the SDK's
 * Client, once it has listed the tools, rejects anything else ("has an output
 * schema but did not return structured content"). So every answer the proxy
 * gives such a tool must pass through a real SDK Client that called
 * tools/list first:
 * - the server's own result, live or replayed from the journal: its
 *   structuredContent, as the server sent it;
 * - a call done whose result the proxy does not have (found by the tier-2
 *   query after the server died or the proxy was killed, or larger than
 *   max_result_bytes): a tool error saying it was done, state COMMITTED;
 * - REJECTED and the other states the proxy words itself: tool errors.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'
import { memoryLedger, memoryToml, proxyClient, reached, resultMeta, resultText, type ProxyClient } from '../helpers/mcp.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
const clients: ProxyClient[] = []
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()))
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function scene(o: Parameters<typeof memoryToml>[1] = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-schema-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'interlock.toml'), memoryToml(dir, o))
  return dir
}

/** The proxy, and its tools listed first: from then on the SDK Client checks results against their output schemas. */
async function open(cwd: string, env: Record<string, string> = {}): Promise<ProxyClient> {
  const c = await proxyClient({ cwd, env })
  clients.push(c)
  const tools = (await c.client.listTools()).tools
  expect(tools.find((t) => t.name === 'create_entities')?.outputSchema).toBeDefined()
  return c
}

const THREAD = { 'interlock/thread': 'schema-conversation' }
const bob = { entities: [{ name: 'bob', entityType: 'person', observations: ['plays chess'] }] }
const create = { name: 'create_entities', arguments: bob, _meta: THREAD }
/** Tier 2: the new entity carries a marker with the effect id, and search_nodes finds it again. */
const TIER2_CREATE = `[targets.memory.tools.create_entities]
tier = 2
mark = { path = "entities.0.observations", value = "interlock-effect {effect_id}" }
query = { tool = "search_nodes", args = { query = "interlock-effect {effect_id}" }, found = "interlock-effect {effect_id}" }
`
const bobs = (dir: string) => memoryLedger(join(dir, 'memory.jsonl')).filter((e) => e.name === 'bob').length

/** Done, its result not here: a tool error the SDK Client accepts, saying so, state COMMITTED. */
function expectDoneWithoutResult(r: Awaited<ReturnType<ProxyClient['client']['callTool']>>): void {
  expect(r.isError).toBe(true)
  expect(r.structuredContent).toBeUndefined()
  expect(resultMeta(r)).toMatchObject({ 'interlock/state': 'COMMITTED', 'interlock/replayed': true })
  expect(resultText(r)).toContain('declares an output schema and its result is not here to give: the call was done; do not make it again')
}

describe('a tool with an output schema, through an SDK Client that listed the tools', () => {
  it('the server\'s own result, live and replayed from the journal, carries its structuredContent', async () => {
    const cwd = scene()
    const proxy = await open(cwd)
    const first = await proxy.client.callTool(create)
    expect(first.structuredContent).toEqual(bob)
    const again = await proxy.client.callTool(create)
    expect(again.structuredContent).toEqual(bob)
    expect(resultMeta(again)).toMatchObject({ 'interlock/effect': resultMeta(first)['interlock/effect'], 'interlock/replayed': true })
    expect(bobs(cwd)).toBe(1)
  })

  it('tier 2, the server died after applying it: found by the query, answered as a tool error that says it was done', async () => {
    const cwd = scene({ fault: 'die-after', tools: ['create_entities'], extra: TIER2_CREATE })
    const proxy = await open(cwd)
    const r = await proxy.client.callTool(create)
    expectDoneWithoutResult(r)
    expect(resultText(r)).toContain('Already done')
    expect(bobs(cwd)).toBe(1)
    expect(reached(join(cwd, 'wire.log'), resultMeta(r)['interlock/effect'] as string)).toBe(1)
  })

  it('tier 2, the proxy killed after the server applied it: recovered at restart, the retry answered as a tool error that says it was done', async () => {
    const cwd = scene({ extra: TIER2_CREATE })
    const doomed = await open(cwd, { INTERLOCK_CRASH_AT: 'after-apply' })
    const lost = await doomed.client.callTool(create).then(
      () => 'answered',
      (e: Error) => e.message,
    )
    expect(lost, doomed.stderr()).toMatch(/Connection closed/)
    await doomed.exited

    const restarted = await open(cwd)
    const retry = await restarted.client.callTool(create)
    expectDoneWithoutResult(retry)
    expect(restarted.stderr()).toMatch(/recovered \S+ \(.*tier 2\)/)
    expect(bobs(cwd)).toBe(1)
    expect(reached(join(cwd, 'wire.log'), resultMeta(retry)['interlock/effect'] as string)).toBe(1)
  })

  it('a result larger than max_result_bytes, asked again: a tool error that says it was done and its result not kept', async () => {
    const cwd = scene({ target: 'max_result_bytes = 10\n' })
    const proxy = await open(cwd)
    const first = await proxy.client.callTool(create)
    expect(first.structuredContent).toEqual(bob)
    const again = await proxy.client.callTool(create)
    expectDoneWithoutResult(again)
    expect(resultText(again)).toContain('was larger than max_result_bytes and was not kept')
    expect(bobs(cwd)).toBe(1)
  })

  it('REJECTED (what the call rests on changed): a tool error, nothing sent', async () => {
    const cwd = scene({ extra: '[targets.memory.tools.create_entities]\ntier = 3\nrests_on = [{ tool = "read_graph" }]\n' })
    const proxy = await open(cwd)
    await proxy.client.callTool({ name: 'read_graph', arguments: {}, _meta: THREAD })
    writeFileSync(join(cwd, 'memory.jsonl'), `${JSON.stringify({ type: 'entity', name: 'carol', entityType: 'person', observations: [] })}\n`)
    const r = await proxy.client.callTool(create)
    expect(r.isError).toBe(true)
    expect(resultMeta(r)['interlock/state']).toBe('REJECTED')
    expect(bobs(cwd)).toBe(0)
  })
})
