/**
 * A LangGraph agent process SIGKILLed after its tool's effect was applied and
 * before it was recorded: before COMMITTED (Interlock's `after-apply` crash
 * point) and before LangGraph's checkpoint after the tool node. A new process
 * resumes the thread from the SQLite checkpointer (with Interlock: through
 * resumeGraph, which recovers the thread first), LangGraph re-executes the
 * tool calls, and the emulators' own ledgers say how often each was applied.
 *
 * Unprotected, as LangGraph 1.7 does it: the prebuilt ToolNode runs every
 * call of the message as one task, so a call that had finished before the
 * kill is sent again with the interrupted one; with one Send per call, a
 * finished call is kept as a pending write and only the interrupted one runs
 * again; under durability "exit" nothing was saved, the run starts over and
 * the model, asked again, calls with new ids. Through Interlock: each refund
 * once (Stripe, tier 1), the email AMBIGUOUS and never sent twice (SendGrid,
 * tier 3).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SendgridEmulator } from '../emulators/sendgrid.js'
import { StripeEmulator } from '../emulators/stripe.js'
import { runTsChild, type ChildResult } from '../helpers/child.js'
import type { LanggraphChildPlan } from '../helpers/langgraph-child.js'
import type { Shape } from '../helpers/langgraph-agent.js'

const CHILD = fileURLToPath(new URL('../helpers/langgraph-child.ts', import.meta.url))

let stripe: StripeEmulator
let sendgrid: SendgridEmulator
const dirs: string[] = []
beforeAll(async () => {
  stripe = await new StripeEmulator().start()
  sendgrid = await new SendgridEmulator().start()
})
afterAll(async () => {
  await Promise.all([stripe?.close(), sendgrid?.close()])
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

type Durability = LanggraphChildPlan['durability']
type Told = { type: string; name?: string; content: string; status?: string; toolCallId?: string; interlock?: { state?: string; replayed?: boolean; effectId?: string } }
interface Resumed {
  /** What the checkpoint held when the new process started. */
  saved: { next: string[]; messages: Told[]; tasks: { name: string; done: boolean }[] }
  messages: Told[]
}

let seq = 0
/** Runs the agent until it dies, then a new process resumes it; returns what the resumed run said. */
async function crashAndResume(p: Omit<LanggraphChildPlan, 'dir' | 'threadId' | 'phase' | 'stripe' | 'sendgrid'>, crashAt?: string): Promise<Resumed> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-langgraph-crash-'))
  dirs.push(dir)
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]
path = "journal.db"

[gate]
max_attempts = 2
backoff_ms = 5

[targets.stripe]
type = "stripe"
api_key = "\${STRIPE_API_KEY}"
base_url = "${stripe.url}"

[targets.mail]
type = "sendgrid"
api_key = "\${SENDGRID_API_KEY}"
base_url = "${sendgrid.url}"
`,
  )
  const plan: LanggraphChildPlan = { ...p, dir, threadId: `ticket-${++seq}`, phase: 'run', stripe: { url: stripe.url, apiKey: stripe.apiKey }, sendgrid: { url: sendgrid.url, apiKey: sendgrid.apiKey } }
  const run = async (phase: LanggraphChildPlan['phase'], env: Record<string, string>): Promise<ChildResult> => {
    const file = join(dir, `${phase}.json`)
    writeFileSync(file, JSON.stringify({ ...plan, phase }))
    return runTsChild(CHILD, [file], env)
  }
  const doomed = await run('run', crashAt ? { INTERLOCK_CRASH_AT: crashAt } : {})
  expect(doomed.signal, `the agent should have been killed mid-call\n${doomed.stdout}\n${doomed.stderr}`).toBe('SIGKILL')
  const resumed = await run('resume', {})
  expect(resumed.code, resumed.stderr).toBe(0)
  return JSON.parse(resumed.stdout.trim().split('\n').pop()!) as Resumed
}

const refundsOf = (charge: string) => stripe.refunds.filter((r) => r.charge === charge).length
const toolMessages = (r: Resumed) => r.messages.filter((m) => m.type === 'tool')

/**
 * The checkpoint the new process found: the model's message with its calls,
 * the tool node still to run; under "exit" nothing at all. With one Send per
 * call, the first call's task had finished: its ToolMessage is a pending
 * write of that step, the other call's task is not done.
 */
function expectSavedBeforeTools(r: Resumed, shape: Shape, durability: Durability, calls: number): void {
  if (durability === 'exit') {
    expect(r.saved.messages).toEqual([])
    return
  }
  expect(r.saved.next).toContain('tools')
  if (shape === 'toolnode') {
    expect(r.saved.messages.map((m) => m.type)).toEqual(['human', 'ai'])
  } else {
    expect(r.saved.messages.map((m) => m.type)).toEqual(['human', 'ai', 'tool'])
    expect(r.saved.tasks.map((t) => t.done)).toEqual([true, ...Array<boolean>(calls - 1).fill(false)])
  }
}

const SHAPES: Shape[] = ['toolnode', 'send']
const DURABILITIES: Durability[] = ['exit', 'async', 'sync']
const cases = SHAPES.flatMap((shape) => DURABILITIES.map((durability) => ({ shape, durability })))

describe.each(cases)('two refunds in one message, $shape shape, durability $durability, the agent killed after the second was applied', ({ shape, durability }) => {
  const setUp = (n: number) => {
    const charges = [`ch_${shape}${durability}${n}a`, `ch_${shape}${durability}${n}b`]
    for (const id of charges) stripe.seedCharge({ id, amount: 2000, currency: 'usd' })
    return { charges, calls: charges.map((charge) => ({ charge, amount: '5.00', currency: 'usd' })) }
  }

  it('through Interlock: resumed, each refund was made once, and the model reads both as done', async () => {
    const { charges, calls } = setUp(1)
    const r = await crashAndResume({ shape, durability, gated: true, tool: 'refund', calls, oneAfterAnother: shape === 'send' }, 'after-apply@2')
    expectSavedBeforeTools(r, shape, durability, 2)
    expect(charges.map(refundsOf)).toEqual([1, 1])
    const told = toolMessages(r)
    expect(told.map((m) => [m.status, m.interlock?.state])).toEqual([
      ['success', 'COMMITTED'],
      ['success', 'COMMITTED'],
    ])
    // The calls the new process ran again found their effects done; under Send with a checkpoint, only the interrupted one ran again.
    const again = told.filter((m) => m.interlock?.replayed)
    expect(again.length).toBe(shape === 'send' && durability !== 'exit' ? 1 : 2)
    for (const m of again) expect(m.content).toContain('Already done: this call had been made before')
    expect(r.messages.at(-1)).toMatchObject({ type: 'ai' })
  })

  it('without Interlock: the same crash refunds again on resume', async () => {
    const { charges, calls } = setUp(2)
    await crashAndResume({ shape, durability, gated: false, tool: 'refund', calls, oneAfterAnother: shape === 'send', dieAfterSends: 2 })
    // ToolNode runs both calls again; one Send per call keeps the finished one, unless nothing was saved ("exit").
    expect(charges.map(refundsOf)).toEqual(shape === 'send' && durability !== 'exit' ? [1, 2] : [2, 2])
  })
})

describe('durability "exit": the resumed run asks the model again, which calls with new ids', () => {
  it('keyed by tool_call_id (identity "call-id"), the same refunds are new effects and are made again: why "auto" names them by content there', async () => {
    const charges = ['ch_exitcallid1', 'ch_exitcallid2']
    for (const id of charges) stripe.seedCharge({ id, amount: 2000, currency: 'usd' })
    const calls = charges.map((charge) => ({ charge, amount: '5.00', currency: 'usd' }))
    const r = await crashAndResume({ shape: 'toolnode', durability: 'exit', gated: true, identity: 'call-id', tool: 'refund', calls }, 'after-apply@2')
    expect(charges.map(refundsOf)).toEqual([2, 2])
    expect(toolMessages(r).map((m) => m.interlock?.replayed)).toEqual([false, false])
  })
})

const sentTo = (to: string) => sendgrid.sent.filter((m) => JSON.stringify(m.body).includes(to)).length

describe.each(DURABILITIES)('an email to the customer (SendGrid, tier 3), durability %s, the agent killed after it was sent', (durability) => {
  it('through Interlock: resumed, the email is AMBIGUOUS, was not sent again, and the model is told an operator must resolve it', async () => {
    const to = `gated-${durability}@customer.example`
    const r = await crashAndResume({ shape: 'toolnode', durability, gated: true, tool: 'email_customer', calls: [{ to, subject: 'Your refund', text: 'We refunded 5.00 USD.' }] }, 'after-apply')
    expectSavedBeforeTools(r, 'toolnode', durability, 1)
    expect(sentTo(to)).toBe(1)
    const [told] = toolMessages(r)
    expect(told).toMatchObject({ status: 'error', interlock: { state: 'AMBIGUOUS' } })
    expect(told!.content).toContain('nobody can know whether it took effect')
    expect(told!.content).toContain(`interlock outbox resolve ${told!.interlock!.effectId} --applied`)
  })
})

describe('an email to the customer, durability sync, the agent killed after it was sent, without Interlock', () => {
  it('resumed, it is sent twice', async () => {
    const to = 'plain@customer.example'
    await crashAndResume({ shape: 'toolnode', durability: 'sync', gated: false, tool: 'email_customer', calls: [{ to, subject: 'Your refund', text: 'We refunded 5.00 USD.' }], dieAfterSends: 1 })
    expect(sentTo(to)).toBe(2)
  })
})
