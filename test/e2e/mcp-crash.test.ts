/**
 * `interlock mcp-proxy` SIGKILLed at each crash point of a call's lifecycle
 * (src/core/crash-points.ts, armed through INTERLOCK_CRASH_AT as the crash
 * harness does), for each tier; restarted, it recovers at start, and the
 * host's retry of the same call (the same thread, named in _meta) gets what
 * the effect came to. Truth is server-memory's own ledger and the wire's
 * record of what reached it:
 *
 * - tiers 1 and 2: applied exactly once (tier 1 may be sent twice, the
 *   server deduplicating; tier 2 is asked, never sent twice);
 * - tier 3: a crash after DISPATCHED is AMBIGUOUS, visible in
 *   `interlock outbox list`, and never sent again.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { memoryLedger, memoryToml, proxyClient, reached, resultMeta, resultText } from '../helpers/mcp.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const THREAD = { 'interlock/thread': 'host-conversation-1' }
const alice = { type: 'entity', name: 'alice', entityType: 'person', observations: ['likes tea'] }

interface TierCase {
  tier: 1 | 2 | 3
  toml: string
  call: { name: string; arguments: Record<string, unknown>; _meta: Record<string, unknown> }
  /** How many times the call's effect is in the server's ledger. */
  applied(dir: string, effectId: string): number
}

const TIERS: TierCase[] = [
  {
    tier: 1,
    toml: '[targets.memory.tools.create_entities]\ntier = 1\n',
    call: { name: 'create_entities', arguments: { entities: [{ name: 'bob', entityType: 'person', observations: [] }] }, _meta: THREAD },
    applied: (dir) => memoryLedger(join(dir, 'memory.jsonl')).filter((e) => e.name === 'bob').length,
  },
  {
    tier: 2,
    toml: `[targets.memory.tools.add_observations]
tier = 2
mark = { path = "observations.0.contents", value = "interlock-effect {effect_id}" }
query = { tool = "search_nodes", args = { query = "interlock-effect {effect_id}" }, found = "interlock-effect {effect_id}" }
`,
    call: { name: 'add_observations', arguments: { observations: [{ entityName: 'alice', contents: ['moved to Lyon'] }] }, _meta: THREAD },
    applied: (dir, id) => (memoryLedger(join(dir, 'memory.jsonl')).find((e) => e.name === 'alice')?.observations ?? []).filter((o) => o === `interlock-effect ${id}`).length,
  },
  {
    // Declares nothing: create_relations says neither readOnlyHint nor idempotentHint, so tier 3.
    tier: 3,
    toml: '',
    call: { name: 'create_relations', arguments: { relations: [{ from: 'alice', to: 'alice', relationType: 'knows' }] }, _meta: THREAD },
    applied: (dir) => memoryLedger(join(dir, 'memory.jsonl')).filter((e) => e.type === 'relation').length,
  },
]

// Every crash point on a call's path: premises checked (nothing journaled yet), its first commit
// (PROPOSED, AUTHORIZED, DISPATCHED) durable, applied, COMMITTED.
const POINTS = ['after-premises', 'after-dispatched', 'after-apply', 'after-committed'] as const

/**
 * What the retry after the restart must see, by tier and point: the state, how often the call
 * reached the server in all, and whether the answer is the server's result (`resultKept`).
 */
function expected(tier: 1 | 2 | 3, point: (typeof POINTS)[number]): { state: string; applied: number; reached: number; resultKept: boolean } {
  if (point === 'after-premises' || point === 'after-committed') return { state: 'COMMITTED', applied: 1, reached: 1, resultKept: true }
  if (tier === 3) return { state: 'AMBIGUOUS', applied: point === 'after-apply' ? 1 : 0, reached: point === 'after-apply' ? 1 : 0, resultKept: false }
  // Tier 1 is sent again (the server keeps one); tier 2 asks, and sends only what it does not find:
  // found, the server's result is lost with the proxy that was killed.
  return { state: 'COMMITTED', applied: 1, reached: tier === 1 && point === 'after-apply' ? 2 : 1, resultKept: !(tier === 2 && point === 'after-apply') }
}

describe.each(TIERS)('mcp-proxy SIGKILLed mid-call, tier $tier', (t) => {
  it.each(POINTS)('at %s: restarted, it recovers, and the host\'s retry gets what the effect came to', async (point) => {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-crash-'))
    dirs.push(dir)
    writeFileSync(join(dir, 'memory.jsonl'), `${JSON.stringify(alice)}\n`)
    writeFileSync(join(dir, 'interlock.toml'), memoryToml(dir, { extra: t.toml }))

    const doomed = await proxyClient({ cwd: dir, env: { INTERLOCK_CRASH_AT: point } })
    const lost = await doomed.client.callTool(t.call).then(
      () => 'answered',
      (e: Error) => e.message,
    )
    if (lost === 'answered') {
      // It never reached the crash point: stop it here rather than leave it running past the test.
      await doomed.close()
      throw new Error(`the proxy answered instead of dying at ${point}\n${doomed.stderr()}`)
    }
    await doomed.exited
    expect(lost, doomed.stderr()).toMatch(/Connection closed/)

    const restarted = await proxyClient({ cwd: dir })
    try {
      const retry = await restarted.client.callTool(t.call)
      const want = expected(t.tier, point)
      const id = resultMeta(retry)['interlock/effect'] as string
      expect(resultMeta(retry)['interlock/state'], `${resultText(retry)}\n${restarted.stderr()}`).toBe(want.state)
      if (want.state === 'AMBIGUOUS') expect(resultText(retry)).toContain('nobody can know whether it took effect')
      else if (want.resultKept) expect(retry.isError).toBeFalsy()
      // Done, its result not here, and every tool of server-memory declares an output schema: a tool error that says so.
      else expect([retry.isError, resultText(retry)]).toEqual([true, expect.stringContaining('the call was done; do not make it again')])
      expect(t.applied(dir, id)).toBe(want.applied)
      expect(reached(join(dir, 'wire.log'), id)).toBe(want.reached)

      const list = await interlock(['outbox', 'list', '--json'], { cwd: dir })
      expect(list.code, list.stderr).toBe(0)
      const effects = (JSON.parse(list.stdout) as { effects: { effectId: string; state: string; thread: string }[] }).effects
      expect(effects.map((e) => [e.effectId, e.state, e.thread])).toEqual([[id, want.state, 'host-conversation-1']])
    } finally {
      await restarted.close()
    }
  })
})
