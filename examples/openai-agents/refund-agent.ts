/**
 * A refund agent on the OpenAI Agents SDK whose side effects go through
 * Interlock: a Stripe refund (tier 1) and a Slack post (tier 3), declared
 * with interlockTool() where the agent had tool({ execute }). Refunds above
 * 100.00 wait for an operator (the policy rule in interlock.toml); the run
 * pauses through the SDK's own interruption and its RunState is saved, to be
 * resumed once an operator has run `interlock outbox release <id>`.
 *
 *   node --import tsx refund-agent.ts start <thread> "Refund 40.00 USD on ch_123, then tell C0REFUNDS" [--run <id>]
 *   node --import tsx refund-agent.ts resume <thread>          # after a release, or a crash: from the saved RunState
 *   node --import tsx refund-agent.ts rerun <thread>           # a run that died before any RunState was saved: from its input
 *   node --import tsx refund-agent.ts approve <thread>         # --without-interlock only: the app's own approval
 *
 * With --without-interlock the same agent declares plain tools (refunds
 * above 100.00 then need the app's own approval): what the agent was before.
 *
 * interlock.toml (in the working folder), with STRIPE_API_KEY and SLACK_TOKEN set:
 *
 *   [store]
 *   path = "journal.db"
 *   [targets.stripe]
 *   type = "stripe"
 *   api_key = "${STRIPE_API_KEY}"
 *   [targets.slack]
 *   type = "slack"
 *   token = "${SLACK_TOKEN}"
 *   [[operators]]
 *   name = "alice"
 *   public_key = "<from interlock operator keygen --name alice>"
 *   [[policy.rules]]
 *   name = "large-refunds"
 *   target = "stripe"
 *   when = [{ arg = "amount", above = "100.00" }]
 *
 * The model is a scripted stand-in (scripted-model.ts) so this runs offline;
 * give the Agent a model name instead to use a real one.
 */
import { randomUUID } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { Agent, run, RunState, setTracingDisabled, tool } from '@openai/agents'
import { z } from 'zod'
import { openInterlock, type Interlock } from 'agent-interlock'
import { heldCalls, interlockTool, rerunInput, resumeRun } from 'agent-interlock/openai-agents'
import { scriptedRefundModel } from './scripted-model.js'

setTracingDisabled(true)

const Refund = z.object({ charge: z.string(), amount: z.string().describe('decimal, e.g. "40.00"'), currency: z.string() })
const Notify = z.object({ channel: z.string().describe('Slack channel id'), text: z.string() })

// After: the side effects go through Interlock; refunds above 100.00 are held by interlock.toml's policy.
function gatedTools(interlock: Interlock) {
  return [
    interlockTool(interlock, { name: 'refund', description: 'Refund part of a Stripe charge.', parameters: Refund, target: 'stripe', premises: 'capture' }),
    interlockTool(interlock, { name: 'notify', description: 'Post a message to a Slack channel.', parameters: Notify, target: 'slack', action: 'post' }),
  ]
}

// Before: plain tools calling the APIs; the app asks a person before large refunds.
function plainTools() {
  const stripe = process.env.STRIPE_BASE_URL ?? 'https://api.stripe.com'
  const slack = process.env.SLACK_BASE_URL ?? 'https://slack.com'
  return [
    tool({
      name: 'refund',
      description: 'Refund part of a Stripe charge.',
      parameters: Refund,
      needsApproval: async (_ctx, { amount }) => Number(amount) > 100,
      execute: async ({ charge, amount }) => {
        const body = new URLSearchParams({ charge, amount: String(Math.round(Number(amount) * 100)) })
        const res = await fetch(`${stripe}/v1/refunds`, { method: 'POST', headers: { authorization: `Bearer ${process.env.STRIPE_API_KEY}`, 'content-type': 'application/x-www-form-urlencoded' }, body })
        return JSON.stringify(await res.json())
      },
    }),
    tool({
      name: 'notify',
      description: 'Post a message to a Slack channel.',
      parameters: Notify,
      execute: async ({ channel, text }) => {
        const res = await fetch(`${slack}/api/chat.postMessage`, { method: 'POST', headers: { authorization: `Bearer ${process.env.SLACK_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ channel, text }) })
        return JSON.stringify(await res.json())
      },
    }),
  ]
}

/** The run's context: the conversation and the run, which the saved RunState carries. */
type Context = { interlockThread: string; interlockRun: string }

interface Saved {
  input: string
  context: Context
  state?: string
}

const [command, thread, request] = process.argv.slice(2).filter((a) => !a.startsWith('--'))
const flag = (name: string) => process.argv.find((a, i) => process.argv[i - 1] === `--${name}`)
const plain = process.argv.includes('--without-interlock')
if (!command || !thread) throw new Error('usage: refund-agent.ts start|resume|rerun|approve <thread> ["<request>"] [--run <id>] [--without-interlock]')

const file = `runs/${thread}.json`
const load = (): Saved => JSON.parse(readFileSync(file, 'utf8')) as Saved
const save = (s: Saved) => (mkdirSync('runs', { recursive: true }), writeFileSync(file, JSON.stringify(s)))

const interlock = plain ? undefined : await openInterlock()
const agent = new Agent<Context>({
  name: 'Refunds',
  instructions: 'You refund Stripe charges when asked, then tell the channel named.',
  tools: interlock ? gatedTools(interlock) : plainTools(),
  model: scriptedRefundModel(),
})

async function go() {
  if (command === 'start') {
    if (!request) throw new Error('start needs the request')
    // Saved before the run: a run that dies before its first interruption can be run again from its input, as the same run.
    const saved: Saved = { input: request, context: { interlockThread: thread!, interlockRun: flag('run') ?? randomUUID() } }
    save(saved)
    return run(agent, saved.input, { context: { ...saved.context } })
  }
  const saved = load()
  if (command === 'resume') {
    if (!saved.state) throw new Error(`${file} holds no paused run: use rerun`)
    return interlock ? resumeRun(interlock, agent, saved.state) : run(agent, await RunState.fromString(agent, saved.state))
  }
  if (command === 'rerun') {
    return interlock ? rerunInput(interlock, agent, saved.input, { ...saved.context }) : run(agent, saved.input, { context: { ...saved.context } })
  }
  if (command === 'approve' && plain) {
    const state = await RunState.fromString(agent, saved.state!)
    for (const item of state.getInterruptions()) state.approve(item)
    // The approval is saved before the call runs: a crash now must not lose it.
    save({ ...saved, state: state.toString() })
    return run(agent, state)
  }
  throw new Error(`unknown command ${command}`)
}

try {
  report(await go())
} finally {
  await interlock?.close()
}

function report(result: Awaited<ReturnType<typeof go>>): void {
  if (result.interruptions.length > 0) {
    save({ ...load(), state: result.state.toString() })
    const held = heldCalls(result.state)
    for (const h of held) console.log(`paused: ${h.toolName} is held by Interlock (effect ${h.effectId})\n${h.text}`)
    const byInterlock = new Set(held.map((h) => h.callId))
    for (const item of result.interruptions) {
      if (!byInterlock.has((item.rawItem as { callId?: string }).callId ?? '')) console.log(`paused: ${item.name} waits for your approval (refund-agent.ts approve ${thread})`)
    }
    return
  }
  console.log(result.finalOutput)
}
