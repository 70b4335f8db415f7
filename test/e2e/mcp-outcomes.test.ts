/**
 * What an MCP client sees of a journaled call, by outcome and tier, with the
 * real server-memory behind the wire (test/helpers/mcp-pipe.mjs), which
 * records every tools/call that reached the server and plays the server's
 * faults: it dies before or after the server answered, hangs, writes what is
 * not JSON, or answers a JSON-RPC error. Truth is the server's own ledger
 * (memory.jsonl) and the wire's record, never the journal alone.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { memoryLedger, memoryToml, proxyClient, reached, resultMeta, resultText, wireLog, type ProxyClient } from '../helpers/mcp.js'
import { relayReady, startRelayProc, type RelayProc } from '../helpers/relay-procs.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
const clients: ProxyClient[] = []
const relays: RelayProc[] = []
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()))
  for (const r of relays.splice(0)) if (r.child.exitCode === null) r.child.kill('SIGKILL')
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function scene(o: Parameters<typeof memoryToml>[1] = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-outcome-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'interlock.toml'), memoryToml(dir, o))
  return dir
}

async function open(cwd: string): Promise<ProxyClient> {
  const c = await proxyClient({ cwd })
  clients.push(c)
  return c
}

async function journal(cwd: string): Promise<{ effectId: string; state: string; action: string }[]> {
  const run = await interlock(['outbox', 'list', '--json'], { cwd })
  expect(run.code, run.stderr).toBe(0)
  return (JSON.parse(run.stdout) as { effects: { effectId: string; state: string; action: string }[] }).effects
}

const alice = { entities: [{ name: 'alice', entityType: 'person', observations: ['likes tea'] }] }
const create = { name: 'create_entities', arguments: alice }
const observe = { name: 'add_observations', arguments: { observations: [{ entityName: 'alice', contents: ['drinks coffee now'] }] } }
/** Tier 2: the observation carries a marker with the effect id, and search_nodes finds it again. */
const TIER2_OBSERVE = `[targets.memory.tools.add_observations]
tier = 2
mark = { path = "observations.0.contents", value = "interlock-effect {effect_id}" }
query = { tool = "search_nodes", args = { query = "interlock-effect {effect_id}" }, found = "interlock-effect {effect_id}" }
`
const TIER1_CREATE = '[targets.memory.tools.create_entities]\ntier = 1\n'

describe('the server dies after applying the call (its answer lost)', () => {
  it('tier 3 (the default for a tool that says nothing of itself): AMBIGUOUS, an operator must resolve it, never sent again', async () => {
    const cwd = scene({ fault: 'die-after', tools: ['create_entities'] })
    const proxy = await open(cwd)
    const r = await proxy.client.callTool(create)
    expect(r.isError).toBe(true)
    expect(resultMeta(r)['interlock/state']).toBe('AMBIGUOUS')
    const id = resultMeta(r)['interlock/effect'] as string
    expect(resultText(r)).toContain('nobody can know whether it took effect')
    expect(resultText(r)).toContain(`interlock outbox resolve ${id} --applied`)
    // Asked again: the same effect, still AMBIGUOUS, not sent again.
    const again = await proxy.client.callTool(create)
    expect(resultMeta(again)).toMatchObject({ 'interlock/effect': id, 'interlock/state': 'AMBIGUOUS' })
    expect(reached(join(cwd, 'wire.log'), id)).toBe(1)
    expect(memoryLedger(join(cwd, 'memory.jsonl')).filter((e) => e.name === 'alice')).toHaveLength(1)
    expect((await journal(cwd)).map((e) => [e.effectId, e.state])).toEqual([[id, 'AMBIGUOUS']])
  })

  it('tier 1: sent again (the tool is idempotent), applied once by the server\'s record, the server\'s result returned', async () => {
    const cwd = scene({ fault: 'die-after', tools: ['create_entities'], extra: TIER1_CREATE })
    const proxy = await open(cwd)
    const r = await proxy.client.callTool(create)
    expect(r.isError).toBeFalsy()
    expect(r.structuredContent).toEqual({ entities: [] })
    const id = resultMeta(r)['interlock/effect'] as string
    expect(reached(join(cwd, 'wire.log'), id)).toBe(2)
    expect(memoryLedger(join(cwd, 'memory.jsonl'))).toEqual([{ type: 'entity', ...alice.entities[0] }])
    expect((await journal(cwd)).map((e) => e.state)).toEqual(['COMMITTED'])
  })

  it('tier 2: the query finds the mark the call carried: COMMITTED without sending it again', async () => {
    const cwd = scene({ fault: 'die-after', tools: ['add_observations'], extra: TIER2_OBSERVE })
    const proxy = await open(cwd)
    await proxy.client.callTool(create)
    const r = await proxy.client.callTool(observe)
    const id = resultMeta(r)['interlock/effect'] as string
    expect(resultMeta(r)).toMatchObject({ 'interlock/state': 'COMMITTED' })
    expect(resultText(r)).toContain('own record shows it')
    // add_observations declares an output schema, and the server's result was lost: a tool error that says it was done.
    expect(r.isError).toBe(true)
    expect(resultText(r)).toContain('the call was done; do not make it again')
    expect(reached(join(cwd, 'wire.log'), id)).toBe(1)
    const entity = memoryLedger(join(cwd, 'memory.jsonl')).find((e) => e.name === 'alice')
    expect(entity?.observations).toEqual(['likes tea', 'drinks coffee now', `interlock-effect ${id}`])
    expect((await journal(cwd)).map((e) => `${e.action} ${e.state}`).sort()).toEqual(['add_observations COMMITTED', 'create_entities COMMITTED'])
  })
})

describe('upstream faults', () => {
  it('the server dies before the call reaches it: tier 1 is sent again on a new session and applied once', async () => {
    const cwd = scene({ fault: 'die-before', tools: ['create_entities'], extra: TIER1_CREATE })
    const proxy = await open(cwd)
    const r = await proxy.client.callTool(create)
    expect(r.isError).toBeFalsy()
    expect(reached(join(cwd, 'wire.log'), resultMeta(r)['interlock/effect'] as string)).toBe(1)
    expect(memoryLedger(join(cwd, 'memory.jsonl'))).toHaveLength(1)
  })

  it('the server hangs past timeout_ms: tier 3 is AMBIGUOUS, and the client is told it timed out', async () => {
    const cwd = scene({ fault: 'hang', tools: ['create_entities'], target: 'timeout_ms = 1500\n' })
    const proxy = await open(cwd)
    const r = await proxy.client.callTool(create)
    expect(resultMeta(r)['interlock/state']).toBe('AMBIGUOUS')
    expect(resultText(r)).toMatch(/no answer within 1500 ms \(timeout_ms\)/)
    // The server did apply it: exactly what AMBIGUOUS is for.
    expect(memoryLedger(join(cwd, 'memory.jsonl'))).toHaveLength(1)
  })

  it('the server writes what is not JSON-RPC: tier 3 is AMBIGUOUS; tier 2 asks and finds it', async () => {
    const cwd = scene({ fault: 'garbage', tools: ['create_entities', 'add_observations'], extra: TIER2_OBSERVE })
    const proxy = await open(cwd)
    const r = await proxy.client.callTool(create)
    expect(resultMeta(r)['interlock/state']).toBe('AMBIGUOUS')
    expect(resultText(r)).toContain('not JSON-RPC')
    const o = await proxy.client.callTool(observe)
    expect(resultMeta(o)['interlock/state']).toBe('COMMITTED')
    expect(reached(join(cwd, 'wire.log'), resultMeta(o)['interlock/effect'] as string)).toBe(1)
    expect((await journal(cwd)).map((e) => `${e.action} ${e.state}`).sort()).toEqual(['add_observations COMMITTED', 'create_entities AMBIGUOUS'])
  })

  it('a JSON-RPC error that says the request was not taken (invalid params): FAILED, the error passed on as the server gave it', async () => {
    const cwd = scene({ fault: 'error-before', tools: ['create_entities'] })
    const proxy = await open(cwd)
    const err = await proxy.client.callTool(create).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(McpError)
    expect((err as McpError).code).toBe(-32602)
    expect((err as McpError).message).toContain('injected: invalid params')
    expect((await journal(cwd)).map((e) => e.state)).toEqual(['FAILED'])
    expect(wireLog(join(cwd, 'wire.log'))).toEqual([])
    expect(memoryLedger(join(cwd, 'memory.jsonl'))).toEqual([])
  })

  it('a JSON-RPC internal error after the server acted: tier 3 AMBIGUOUS, tier 2 found by its query', async () => {
    const cwd = scene({ fault: 'error-after', tools: ['create_entities', 'add_observations'], extra: TIER2_OBSERVE })
    const proxy = await open(cwd)
    const r = await proxy.client.callTool(create)
    expect(resultMeta(r)['interlock/state']).toBe('AMBIGUOUS')
    expect(resultText(r)).toContain('JSON-RPC error -32603: injected: internal error')
    const o = await proxy.client.callTool(observe)
    expect(resultMeta(o)['interlock/state']).toBe('COMMITTED')
    expect(memoryLedger(join(cwd, 'memory.jsonl')).find((e) => e.name === 'alice')?.observations).toHaveLength(3)
  })
})

describe('held for operators, released, sent by a relay', () => {
  it('HELD names the effect, the rule and the release command; after two releases a relay sends it and the client\'s retry gets the server\'s result', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-held-'))
    dirs.push(dir)
    const keys: Record<string, string> = {}
    for (const name of ['alice', 'bob']) {
      const run = await interlock(['operator', 'keygen', '--name', name, '--json'], { cwd: dir })
      expect(run.code, run.stderr).toBe(0)
      keys[name] = (JSON.parse(run.stdout) as { publicKey: string }).publicKey
    }
    const relayKey = await interlock(['relay', 'keygen', '--name', 'relay-1'], { cwd: dir })
    expect(relayKey.code, relayKey.stderr).toBe(0)
    const policy = `[[operators]]\nname = "alice"\npublic_key = "${keys.alice}"\n[[operators]]\nname = "bob"\npublic_key = "${keys.bob}"\n[[policy.rules]]\nname = "new-people"\ntarget = "memory"\naction = "create_entities"\nquorum = 2\nrelease_ttl = "15m"\n`
    writeFileSync(join(dir, 'interlock.toml'), `${memoryToml(dir, { extra: TIER1_CREATE })}${policy}`)
    const proxy = await open(dir)
    const held = await proxy.client.callTool(create)
    expect(held.isError).toBe(true)
    const id = resultMeta(held)['interlock/effect'] as string
    expect(resultMeta(held)['interlock/state']).toBe('HELD')
    expect(resultText(held)).toContain('rule "new-people"')
    expect(resultText(held)).toContain(`interlock outbox release ${id}`)
    expect(memoryLedger(join(dir, 'memory.jsonl'))).toEqual([])

    for (const name of ['alice', 'bob']) {
      const run = await interlock(['outbox', 'release', id, '--yes', '--key', join(dir, `${name}.operator.key`)], { cwd: dir })
      expect(run.code, run.stderr).toBe(0)
    }
    const relay = startRelayProc('relay-1', ['--key', join(dir, 'relay-1.relay.key'), '--poll-ms', '100'], dir)
    relays.push(relay)
    await relayReady(relay)
    const end = Date.now() + 30_000
    while ((await journal(dir)).find((e) => e.effectId === id)?.state !== 'COMMITTED') {
      if (Date.now() > end) throw new Error(`the relay did not commit ${id}:\n${relay.stderr}`)
      await new Promise((r) => setTimeout(r, 200))
    }
    relay.child.kill('SIGTERM')
    await relay.exited
    expect(memoryLedger(join(dir, 'memory.jsonl'))).toEqual([{ type: 'entity', ...alice.entities[0] }])

    const retry = await proxy.client.callTool(create)
    expect(retry.isError).toBeFalsy()
    expect(retry.structuredContent).toEqual(alice)
    expect(resultMeta(retry)).toMatchObject({ 'interlock/effect': id, 'interlock/state': 'COMMITTED', 'interlock/replayed': true })
    expect(reached(join(dir, 'wire.log'), id)).toBe(1)
  })
})

describe('--outbox: the proxy only proposes, a relay sends', () => {
  it('the call is answered with the server\'s result once the relay has committed it, sent once', async () => {
    const dir = scene({ extra: TIER1_CREATE })
    const key = await interlock(['relay', 'keygen', '--name', 'relay-1'], { cwd: dir })
    expect(key.code, key.stderr).toBe(0)
    const relay = startRelayProc('relay-1', ['--key', join(dir, 'relay-1.relay.key'), '--poll-ms', '100'], dir)
    relays.push(relay)
    await relayReady(relay)
    const proxy = await proxyClient({ cwd: dir, args: ['--outbox', '--wait', '30000'] })
    clients.push(proxy)
    const r = await proxy.client.callTool(create)
    expect(r.isError, resultText(r)).toBeFalsy()
    expect(r.structuredContent).toEqual(alice)
    const id = resultMeta(r)['interlock/effect'] as string
    expect(resultMeta(r)['interlock/state']).toBe('COMMITTED')
    expect(reached(join(dir, 'wire.log'), id)).toBe(1)
    expect(memoryLedger(join(dir, 'memory.jsonl'))).toEqual([{ type: 'entity', ...alice.entities[0] }])
  })
})
