/**
 * The agent integrations' shared core (src/integrations/agent/): which effect
 * a tool call is (by a stable call id, or by its content), what the model is
 * told for each outcome, the hold check made before a framework runs a tool,
 * and recovery of one thread before a run resumes. Against the demo's HTTP
 * service, which counts every application.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { generateKeyPair, openInterlock, releaseEffect, systemClock, type Interlock } from '../../src/core/index.js'
import { holdBeforeRun, recoverThread, runToolCall, threadName, wouldHold } from '../../src/integrations/agent/index.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'

let service: HttpService
const open: Interlock[] = []
beforeAll(async () => {
  service = await startHttpService()
})
afterAll(async () => {
  for (const i of open) await i.close()
  await service?.close()
})
beforeEach(() => service.reset())

async function interlockWith(extra = ''): Promise<Interlock> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-agent-core-'))
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]
path = "journal.db"

[gate]
max_attempts = 2
backoff_ms = 5
max_wait_ms = 2000

[targets.refunds]
type = "http"
tier = 1
url = "${service.url}/idempotent"
premise_url = "${service.url}/resources/orders/{args.order}"

[targets.notify]
type = "http"
tier = 3
url = "${service.url}/plain"
${extra}`,
  )
  const interlock = await openInterlock({ cwd: dir, sleep: async () => {} })
  open.push(interlock)
  return interlock
}

const applications = (): number => Object.values(service.counts().idempotent).reduce((a, b) => a + b, 0)

describe('runToolCall', () => {
  it('a stable call id names the effect: re-executed, it is not sent again, and the model is told it was done before', async () => {
    const interlock = await interlockWith()
    const call = { thread: 'lg/t1', target: 'refunds', action: 'refund', args: { charge: 'ch_1', amount: 5 }, callId: 'toolu_01' }
    const first = await runToolCall(interlock, call)
    expect(first).toMatchObject({ status: 'committed', state: 'COMMITTED', isError: false, replayed: false })
    expect(first.text).toMatch(/^Done \(effect [0-9a-f]{64}\)\./)
    const again = await runToolCall(interlock, call)
    expect(again).toMatchObject({ status: 'committed', effectId: first.effectId, replayed: true })
    expect(again.text).toContain('Already done: this call had been made before')
    expect(applications()).toBe(1)
    // A new call id is a new call, even with the same arguments: the model asked twice.
    const other = await runToolCall(interlock, { ...call, callId: 'toolu_02' })
    expect(other.effectId).not.toBe(first.effectId)
    expect(applications()).toBe(2)
  })

  it('without a call id, the content names it: a retry joins it, and dedupe "marked" makes an unmarked repeat a new effect', async () => {
    const interlock = await interlockWith()
    const call = { thread: 'lg/t2', target: 'refunds', action: 'refund', args: { charge: 'ch_2', amount: 5 } }
    const a = await runToolCall(interlock, call)
    const b = await runToolCall(interlock, call)
    expect(b.effectId).toBe(a.effectId)
    expect(b.replayed).toBe(true)
    expect(applications()).toBe(1)
    const c = await runToolCall(interlock, { ...call, dedupe: { dedupe: 'marked', dedupeWindowMs: 0 } })
    expect(c.effectId).not.toBe(a.effectId)
    const d = await runToolCall(interlock, { ...call, dedupe: { dedupe: 'marked', dedupeWindowMs: 0 }, retry: true })
    expect(d.effectId).toBe(c.effectId)
    expect(applications()).toBe(2)
  })

  it('without a call id, the conversation\'s count of identical calls shown done (seen) tells a re-execution from a repeat, whatever the time since', async () => {
    const interlock = await interlockWith()
    const call = { thread: 'ai/t7', target: 'refunds', action: 'refund', args: { charge: 'ch_7', amount: 5 } }
    const first = await runToolCall(interlock, { ...call, seen: 0 })
    // Re-executed after a crash: the conversation does not show it yet, so it is the same effect.
    const again = await runToolCall(interlock, { ...call, seen: 0 })
    expect(again).toMatchObject({ effectId: first.effectId, replayed: true })
    expect(applications()).toBe(1)
    // The conversation shows it done and the model asks again: a second effect, sent.
    const repeat = await runToolCall(interlock, { ...call, seen: 1 })
    expect(repeat.effectId).not.toBe(first.effectId)
    expect(repeat).toMatchObject({ status: 'committed', replayed: false })
    expect(applications()).toBe(2)
    expect((await runToolCall(interlock, { ...call, seen: 1 })).effectId).toBe(repeat.effectId)
    // A conversation restarted from before both: its first call is the first effect, not the last.
    expect((await runToolCall(interlock, { ...call, seen: 0 })).effectId).toBe(first.effectId)
    expect(applications()).toBe(2)
  })

  it('two identical calls at once are one effect, sent once', async () => {
    const interlock = await interlockWith()
    const call = { thread: 'lg/t3', target: 'refunds', action: 'refund', args: { charge: 'ch_3', amount: 1 } }
    const [a, b] = await Promise.all([runToolCall(interlock, call), runToolCall(interlock, call)])
    expect(a.effectId).toBe(b.effectId)
    expect(applications()).toBe(1)
  })

  it('a tier-3 call whose answer was lost is AMBIGUOUS, and the model is told an operator must resolve it', async () => {
    const interlock = await interlockWith()
    service.setFault({ kind: 'drop', afterApply: true }, { path: '/plain' })
    const answer = await runToolCall(interlock, { thread: 'lg/t4', target: 'notify', action: 'send', args: { to: 'ops' }, callId: 'c1' })
    expect(answer).toMatchObject({ status: 'ambiguous', state: 'AMBIGUOUS', isError: true })
    expect(answer.text).toContain(`interlock outbox resolve ${answer.effectId} --applied`)
    expect(answer.text).toContain('will not be sent again on its own')
  })

  it('premises read when the agent decided, changed since: rejected, nothing sent, and the text says to read again', async () => {
    const interlock = await interlockWith()
    service.setResource('orders/o1', { status: 'open', total: 5 })
    const args = { charge: 'ch_5', amount: 5, order: 'o1' }
    const read = await interlock.gate.capture('refunds', 'refund', args)
    service.setResource('orders/o1', { status: 'cancelled', total: 5 })
    const answer = await runToolCall(interlock, { thread: 'lg/t5', target: 'refunds', action: 'refund', args, premises: () => read })
    expect(answer).toMatchObject({ status: 'rejected', state: 'REJECTED', isError: true })
    expect(answer.text).toContain('Read it again and decide anew')
    expect(answer.text).toContain('status')
    expect(applications()).toBe(0)
  })

  it('arguments Interlock refuses (not JSON) are a tool error the model reads, nothing journaled; a target the tool names that does not exist is the developer\'s error, thrown', async () => {
    const interlock = await interlockWith()
    const answer = await runToolCall(interlock, { thread: 'lg/t6', target: 'refunds', action: 'refund', args: { charge: 'ch_6', amount: Number.NaN } })
    expect(answer).toMatchObject({ status: 'refused', state: 'REFUSED', isError: true })
    expect(answer.text).toMatch(/^Refused, nothing was sent or journaled: .*amount/)
    await expect(runToolCall(interlock, { thread: 'lg/t6', target: 'nope', action: 'x', args: {} })).rejects.toThrow(/no target named "nope"/)
    expect(await interlock.store.list()).toEqual([])
  })
})

describe('holdBeforeRun', () => {
  const rules = `
[[operators]]
name = "alice"
public_key = "${generateKeyPair('operator', 'alice').publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "refunds"
when = [{ arg = "amount", above = "100" }]
`
  it('journals a call a rule holds as HELD, sends nothing, and says held again until it is released', async () => {
    const interlock = await interlockWith(rules)
    const call = { thread: 'ag/t1', target: 'refunds', action: 'refund', args: { charge: 'ch_9', amount: 500 }, callId: 'call_1' }
    expect(wouldHold(interlock, call)?.rule).toBe('large-refunds')
    const first = await holdBeforeRun(interlock, call)
    expect(first.held).toBe(true)
    expect(first.answer?.text).toContain(`interlock outbox release ${first.effectId}`)
    expect((await interlock.store.get(first.effectId!))?.state).toBe('HELD')
    const second = await holdBeforeRun(interlock, call)
    expect(second).toMatchObject({ held: true, effectId: first.effectId })
    expect(applications()).toBe(0)
  })

  it('a held call whose repeat would be a new effect (againIsNew) tells the model not to call again; otherwise, to call again once released', async () => {
    const interlock = await interlockWith(rules)
    const byId = await runToolCall(interlock, { thread: 'ag/t3', target: 'refunds', action: 'refund', tool: 'refund', args: { charge: 'ch_7', amount: 500 }, callId: 'call_3', againIsNew: true })
    expect(byId.text).toContain('Do not call this tool again for it: that would be a second refund.')
    expect(byId.text).not.toContain('Call this tool again')
    for (const call of [
      { thread: 'ag/t3', target: 'refunds', action: 'refund', args: { charge: 'ch_6', amount: 500 } },
      { thread: 'ag/t3', target: 'refunds', action: 'refund', args: { charge: 'ch_4', amount: 500 }, callId: 'call_5' },
    ]) {
      expect((await runToolCall(interlock, call)).text).toContain('Call this tool again with the same arguments once it is released to get its result.')
    }
  })

  it('a held call released by an operator and carried on by the same call is reported made now, not "already done"', async () => {
    const alice = generateKeyPair('operator', 'alice')
    const interlock = await interlockWith(rules.replace(/public_key = "[^"]*"/, `public_key = "${alice.publicKey}"`))
    const call = { thread: 'ag/t4', target: 'refunds', action: 'refund', args: { charge: 'ch_5', amount: 500 }, callId: 'call_4' }
    const held = await runToolCall(interlock, call)
    expect(held.status).toBe('held')
    await releaseEffect({ store: interlock.store, operators: interlock.operators, policy: interlock.policy, key: alice, clock: systemClock }, held.effectId!)
    const done = await runToolCall(interlock, call)
    expect(done).toMatchObject({ status: 'committed', effectId: held.effectId, replayed: true })
    expect(done.text).toMatch(/^Done \(effect [0-9a-f]{64}\)\./)
    expect(applications()).toBe(1)
  })

  it('a held call released and sent by another caller between the check\'s look and its run is told done before, not made now: the run reads the effect again', async () => {
    const alice = generateKeyPair('operator', 'alice')
    const interlock = await interlockWith(rules.replace(/public_key = "[^"]*"/, `public_key = "${alice.publicKey}"`))
    const call = { thread: 'ag/t5', target: 'refunds', action: 'refund', args: { charge: 'ch_3', amount: 500 }, callId: 'call_6' }
    const held = await holdBeforeRun(interlock, call)
    expect(held.held).toBe(true)
    // The check's first read answers HELD; right after it, operators release the effect and another caller sends it.
    const store = interlock.store
    const get = store.get.bind(store)
    let moved = false
    store.get = async (id) => {
      const snap = await get(id)
      if (!moved && id === held.effectId) {
        moved = true
        await releaseEffect({ store, operators: interlock.operators, policy: interlock.policy, key: alice, clock: systemClock }, id)
        expect((await runToolCall(interlock, call)).status).toBe('committed')
      }
      return snap
    }
    const checked = await holdBeforeRun(interlock, call)
    expect(checked.effectId).toBe(held.effectId)
    // Not held any more: the framework's pause must not wait for an approval of what is done.
    expect(checked.held).toBe(false)
    expect(checked.answer).toMatchObject({ status: 'committed', replayed: true })
    expect(checked.answer?.text).toContain('Already done: this call had been made before')
    expect(applications()).toBe(1)
  })

  it('a call no rule holds is not held and not journaled by the check', async () => {
    const interlock = await interlockWith(rules)
    const call = { thread: 'ag/t2', target: 'refunds', action: 'refund', args: { charge: 'ch_8', amount: 5 }, callId: 'call_2' }
    const answer = await holdBeforeRun(interlock, call)
    expect(answer.held).toBe(false)
    expect(await interlock.store.get(answer.effectId!)).toBeUndefined()
  })
})

describe('recoverThread', () => {
  it('finishes only the resumed thread: a tier-1 effect left in flight there is sent again with its key, another thread is left alone', async () => {
    const interlock = await interlockWith()
    service.setFault({ kind: 'status', status: 503 }, { path: '/idempotent' })
    const mine = await runToolCall(interlock, { thread: 'lg/mine', target: 'refunds', action: 'refund', args: { charge: 'ch_m', amount: 5 }, callId: 'x' })
    const theirs = await runToolCall(interlock, { thread: 'lg/theirs', target: 'refunds', action: 'refund', args: { charge: 'ch_t', amount: 5 }, callId: 'y' })
    expect(mine.status).toBe('in_flight')
    expect(theirs.status).toBe('in_flight')
    service.clearFaults()
    const report = await recoverThread(interlock, 'lg/mine')
    expect(report?.effects.map((e) => e.effectId)).toEqual([mine.effectId])
    expect((await interlock.store.get(mine.effectId!))?.state).toBe('COMMITTED')
    expect((await interlock.store.get(theirs.effectId!))?.state).not.toBe('COMMITTED')
    // Re-executed after the resume, the call finds it done: sent once in all.
    const again = await runToolCall(interlock, { thread: 'lg/mine', target: 'refunds', action: 'refund', args: { charge: 'ch_m', amount: 5 }, callId: 'x' })
    expect(again).toMatchObject({ status: 'committed', replayed: true })
    expect(applications()).toBe(1)
  })
})

describe('threadName', () => {
  it('keeps an id that fits, names one that does not by its hash, and never merges two', () => {
    expect(threadName('langgraph', 'thread-42')).toBe('langgraph/thread-42')
    const odd = threadName('langgraph', 'user #7 — chat')
    expect(odd).toMatch(/^langgraph\/sha256-[0-9a-f]{40}$/)
    expect(threadName('langgraph', 'user #7 — chat')).toBe(odd)
    expect(threadName('langgraph', 'user #8 — chat')).not.toBe(odd)
    expect(() => threadName('langgraph', '')).toThrow(/non-empty/)
  })

  it('an id that fits but spells another id\'s hashed name is not that id\'s thread', () => {
    const odd = threadName('langgraph', 'user #7 — chat')
    const lookalike = odd.slice('langgraph/'.length)
    expect(threadName('langgraph', lookalike)).not.toBe(odd)
    expect(threadName('langgraph', lookalike)).toBe(threadName('langgraph', lookalike))
  })
})

describe('notDoneWords', () => {
  it('ends a refusal with one full stop, whether or not the service\'s reason has its own', async () => {
    const { notDoneWords } = await import('../../src/integrations/agent/words.js')
    const w = { tool: 'send', target: 'mail', scrub: (t: string) => t }
    const own = notDoneWords({ status: 'failed', effectId: 'e1', reason: 'The from address does not match a verified Sender Identity.' }, w)
    expect(own.text).toMatch(/Sender Identity\.$/)
    expect(own.text).not.toContain('..')
    expect(notDoneWords({ status: 'failed', effectId: 'e1', reason: 'answered 403' }, w).text).toMatch(/answered 403\.$/)
  })
})
