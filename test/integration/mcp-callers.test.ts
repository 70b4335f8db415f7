/**
 * Callers of the MCP gateway kept apart: one `McpProxy` in this process,
 * serving several principals at once (`proxy.serve(transport, id,
 * principal)`, as the HTTP gateway does once it has authenticated a
 * request), each through a real SDK Client on an in-memory transport pair,
 * in front of the real server-memory behind the recording wire
 * (test/helpers/mcp-pipe.mjs). Truth is the server's ledger, the wire's
 * record of what reached the server, and the journal.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { afterEach, describe, expect, it } from 'vitest'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { openInterlock, type Interlock } from '../../src/core/interlock.js'
import { McpProxy, type Principal } from '../../src/integrations/mcp/index.js'
import { memoryLedger, memoryToml, resultMeta, resultText, wireLog } from '../helpers/mcp.js'

const ALICE: Principal = { id: 'token:alice-bot', via: 'bearer' }
const MALLORY: Principal = { id: 'token:mallory', via: 'bearer' }
const EVE: Principal = { id: 'user:eve', via: 'os-user' }

interface Gateway {
  dir: string
  interlock: Interlock
  proxy: McpProxy
  /** A client of the gateway, served as `principal`. */
  as(principal: Principal): Promise<Client>
}

const opened: { dir: string; interlock: Interlock; proxy: McpProxy; clients: Client[] }[] = []
afterEach(async () => {
  for (const g of opened.splice(0)) {
    await Promise.allSettled(g.clients.map((c) => c.close()))
    await g.proxy.close()
    await g.interlock.close()
    rmSync(g.dir, { recursive: true, force: true })
  }
})

async function gateway(o: Parameters<typeof memoryToml>[1] = {}, more = ''): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-callers-'))
  writeFileSync(join(dir, 'interlock.toml'), memoryToml(dir, o) + more)
  const interlock = await openInterlock({ cwd: dir, env: {} })
  const proxy = await McpProxy.start({ interlock, mode: 'inline', log: () => {} })
  const clients: Client[] = []
  opened.push({ dir, interlock, proxy, clients })
  let n = 0
  return {
    dir,
    interlock,
    proxy,
    async as(principal) {
      const [near, far] = InMemoryTransport.createLinkedPair()
      void proxy.serve(far, `session-${++n}`, principal)
      const client = new Client({ name: 'interlock-test-host', version: '1.0.0' }, { capabilities: {} })
      await client.connect(near)
      clients.push(client)
      return client
    },
  }
}

const entity = (name: string) => ({ entities: [{ name, entityType: 'person', observations: ['likes tea'] }] })
const create = (name: string, meta: Record<string, unknown> = {}) => ({ name: 'create_entities', arguments: entity(name), _meta: meta })
const wire = (g: Gateway) => wireLog(join(g.dir, 'wire.log'))

describe('two principals, one thread name', () => {
  it("B naming A's thread and repeating A's call with A's key gets an effect of its own: never A's result, A's effect untouched", async () => {
    const g = await gateway()
    const a = await g.as(ALICE)
    const b = await g.as(MALLORY)
    const meta = { 'interlock/thread': 'shared-thread', 'interlock/key': 'order-1' }
    const first = await a.callTool(create('alice', meta))
    expect(first.isError).toBeFalsy()
    expect(first.structuredContent).toEqual(entity('alice'))
    const aId = resultMeta(first)['interlock/effect'] as string
    const aBefore = await g.interlock.store.history(aId)
    // A's own repeat is A's retry: the journal's answer.
    expect(resultMeta(await a.callTool(create('alice', meta)))).toMatchObject({ 'interlock/effect': aId, 'interlock/replayed': true })

    const theirs = await b.callTool(create('alice', meta))
    const bId = resultMeta(theirs)['interlock/effect'] as string
    expect(bId).not.toBe(aId)
    expect(resultMeta(theirs)['interlock/replayed']).toBeUndefined()
    // The server's own answer to B's call (alice exists already: nothing new), not A's journaled one.
    expect(theirs.structuredContent).toEqual({ entities: [] })
    expect(JSON.stringify(theirs)).not.toContain(aId)
    // B's repeat is B's retry, still not A's.
    expect(resultMeta(await b.callTool(create('alice', meta)))).toMatchObject({ 'interlock/effect': bId, 'interlock/replayed': true })

    const a1 = await g.interlock.store.get(aId)
    const b1 = await g.interlock.store.get(bId)
    expect(a1?.effect).toMatchObject({ thread: 'shared-thread', key: 'order-1', principal: ALICE.id })
    expect(b1?.effect).toMatchObject({ thread: 'shared-thread', key: 'order-1', principal: MALLORY.id })
    expect(await g.interlock.store.history(aId)).toEqual(aBefore)
    expect(wire(g).filter((c) => c.tool === 'create_entities').map((c) => c.effect)).toEqual([aId, bId])
    expect(memoryLedger(join(g.dir, 'memory.jsonl')).filter((e) => e.name === 'alice')).toHaveLength(1)
  })

  it("two principals' identical calls at the same time are two effects: neither joins the other's", async () => {
    const g = await gateway()
    const a = await g.as(ALICE)
    const b = await g.as(MALLORY)
    const meta = { 'interlock/thread': 'shared-thread' }
    const [ra, rb] = await Promise.all([a.callTool(create('bob', meta)), b.callTool(create('bob', meta))])
    expect(resultMeta(ra)['interlock/effect']).not.toBe(resultMeta(rb)['interlock/effect'])
    expect(wire(g).filter((c) => c.tool === 'create_entities')).toHaveLength(2)
  })
})

describe('caller keys (SEP-3182)', () => {
  it('the same key with other arguments in the same thread: a tool error naming the key and its effect; nothing journaled, nothing sent', async () => {
    const g = await gateway()
    const a = await g.as(ALICE)
    const meta = { 'interlock/thread': 'orders', 'interlock/key': 'k-7' }
    const first = await a.callTool(create('carol', meta))
    const id = resultMeta(first)['interlock/effect'] as string
    const sent = wire(g).length
    const journaled = (await g.interlock.store.list({})).length

    const other = await a.callTool(create('dave', meta))
    expect(other.isError).toBe(true)
    expect(resultText(other)).toContain('idempotency key reused with different arguments')
    expect(resultText(other)).toContain('"k-7"')
    expect(resultText(other)).toContain(id)
    expect(resultMeta(other)['interlock/effect']).toBeUndefined()
    // Another tool with the key is the same mistake.
    const otherTool = await a.callTool({ name: 'add_observations', arguments: { observations: [{ entityName: 'carol', contents: ['x'] }] }, _meta: meta })
    expect(resultText(otherTool)).toContain('idempotency key reused with different arguments')
    // SEP-3182's idempotencyKey names the same key.
    const sep = await a.callTool({ ...create('erin', { 'interlock/thread': 'orders' }), idempotencyKey: 'k-7' } as Parameters<Client['callTool']>[0])
    expect(resultText(sep)).toContain('idempotency key reused with different arguments')
    expect(wire(g)).toHaveLength(sent)
    expect(await g.interlock.store.list({})).toHaveLength(journaled)
    expect(memoryLedger(join(g.dir, 'memory.jsonl')).map((e) => e.name)).toEqual(['carol'])

    // The same call with the key again is its retry; with idempotencyKey too.
    expect(resultMeta(await a.callTool(create('carol', meta)))).toMatchObject({ 'interlock/effect': id, 'interlock/replayed': true })
    const sepRetry = await a.callTool({ ...create('carol', { 'interlock/thread': 'orders' }), idempotencyKey: 'k-7' } as Parameters<Client['callTool']>[0])
    expect(resultMeta(sepRetry)).toMatchObject({ 'interlock/effect': id, 'interlock/replayed': true })
    // The key is the caller's own: another principal's, or another thread's, is another key.
    const b = await g.as(MALLORY)
    expect((await b.callTool(create('dave', meta))).isError).toBeFalsy()
    expect((await a.callTool(create('dave', { ...meta, 'interlock/thread': 'other-orders' }))).isError).toBeFalsy()
  })

  it('two calls with one key and different arguments at once: one goes, the other is refused naming it', async () => {
    const g = await gateway()
    const a = await g.as(ALICE)
    const meta = { 'interlock/thread': 'orders', 'interlock/key': 'k-race' }
    const results = await Promise.all([a.callTool(create('frank', meta)), a.callTool(create('grace', meta))])
    const went = results.filter((r) => !r.isError)
    const refused = results.filter((r) => r.isError)
    expect(went).toHaveLength(1)
    expect(refused).toHaveLength(1)
    expect(resultText(refused[0])).toContain(resultMeta(went[0])['interlock/effect'] as string)
    expect(wire(g).filter((c) => c.tool === 'create_entities')).toHaveLength(1)
  })

  it('an identical call in progress with the same key is joined: one effect, sent once, both answered', async () => {
    const g = await gateway()
    const a = await g.as(ALICE)
    const meta = { 'interlock/thread': 'orders', 'interlock/key': 'k-join' }
    const [r1, r2] = await Promise.all([a.callTool(create('heidi', meta)), a.callTool(create('heidi', meta))])
    expect(resultMeta(r1)['interlock/effect']).toBe(resultMeta(r2)['interlock/effect'])
    expect(r1.structuredContent).toEqual(entity('heidi'))
    expect(r2.structuredContent).toEqual(entity('heidi'))
    expect(wire(g).filter((c) => c.tool === 'create_entities')).toHaveLength(1)
  })

  it("a key of the proxy's own form (repeat-<n>) is refused, naming it", async () => {
    const g = await gateway()
    const a = await g.as(ALICE)
    const r = await a.callTool(create('ivan', { 'interlock/key': 'repeat-2' }))
    expect(r.isError).toBe(true)
    expect(resultText(r)).toContain('"repeat-2"')
    expect(wire(g)).toHaveLength(0)
  })
})

describe('allow and deny, by principal', () => {
  const lists = { target: 'allow = ["token:*"]\n', extra: '[targets.memory.tools.create_entities]\ntier = 3\ndeny = ["token:mallory"]\n' }

  it('a call a list keeps out is a tool error naming the principal and the key; nothing journaled, nothing sent', async () => {
    const g = await gateway(lists)
    const b = await g.as(MALLORY)
    const refused = await b.callTool(create('judy'))
    expect(refused.isError).toBe(true)
    expect(resultText(refused)).toContain('token:mallory may not call create_entities: targets.memory.tools.create_entities.deny lists "token:mallory"')
    // Read tools are kept out by the target's list too.
    const e = await g.as(EVE)
    const read = await e.callTool({ name: 'read_graph', arguments: {} })
    expect(read.isError).toBe(true)
    expect(resultText(read)).toContain('user:eve may not call read_graph: targets.memory.allow does not list it')
    expect(wire(g)).toHaveLength(0)
    expect(await g.interlock.store.list({})).toEqual([])

    // What the lists let through goes as ever.
    expect((await b.callTool({ name: 'read_graph', arguments: {} })).isError).toBeFalsy()
    const a = await g.as(ALICE)
    const ok = await a.callTool(create('judy'))
    expect(ok.isError).toBeFalsy()
    expect((await g.interlock.store.list({})).map((s) => s.effect.principal)).toEqual([ALICE.id])
  })
})

describe('policy rules match a principal', () => {
  it("a rule naming principals holds their calls; another principal's identical call goes", async () => {
    const operator = generateKeyPair('operator', 'alice')
    const policy = `\n[[operators]]\nname = "alice"\npublic_key = "${operator.publicKey}"\n\n[[policy.rules]]\nname = "bots-wait"\ntarget = "memory"\nprincipal = "token:*"\n`
    const g = await gateway({}, policy)
    const bot = await g.as(ALICE)
    const person = await g.as(EVE)
    const held = await bot.callTool(create('ken'))
    expect(resultMeta(held)['interlock/state']).toBe('HELD')
    const heldId = resultMeta(held)['interlock/effect'] as string
    expect((await g.interlock.store.get(heldId))?.detail).toMatchObject({ rule: 'bots-wait' })
    const went = await person.callTool(create('ken'))
    expect(resultMeta(went)['interlock/state']).toBe('COMMITTED')
    expect(wire(g).map((c) => c.effect)).toEqual([resultMeta(went)['interlock/effect']])
  })
})

describe('trace context', () => {
  it('traceparent and tracestate in _meta reach the server and are journaled with the effect', async () => {
    const g = await gateway()
    const a = await g.as(ALICE)
    const trace = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'congo=t61rcWkgMzE' }
    const r = await a.callTool(create('leo', trace))
    const id = resultMeta(r)['interlock/effect'] as string
    expect(wire(g)[0]?.meta).toMatchObject({ ...trace, 'interlock/effect': id })
    expect((await g.interlock.store.get(id))?.effect.trace).toEqual(trace)
    expect((await g.interlock.store.history(id))[0]!.data.effect).toMatchObject({ trace, principal: ALICE.id })
    // A malformed traceparent is passed on as the client sent it, and not journaled.
    const bad = await a.callTool(create('mia', { traceparent: 'not-a-trace' }))
    expect(wire(g)[1]?.meta).toMatchObject({ traceparent: 'not-a-trace' })
    expect((await g.interlock.store.get(resultMeta(bad)['interlock/effect'] as string))?.effect.trace).toBeUndefined()
  })
})
