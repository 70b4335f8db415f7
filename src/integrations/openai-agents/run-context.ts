/**
 * What the adapter reads from, and keeps in, an Agents SDK run's context.
 * The context is the one part of a run that a saved RunState carries
 * (`state.toString()` serializes it, `RunState.fromString` brings it back),
 * so whatever must survive a pause or a crash lives there:
 *
 * - `interlockThread` (the app's): the conversation; its effects journal to
 *   thread `openai-agents/<id>`, and resuming recovers that thread.
 * - `interlockRun` (the app's, or drawn at the run's first tool call): the
 *   run, across resumes. A RunState carries it; an app that re-runs a crashed
 *   run from its input gives the same one (a request or message id).
 * - `interlockCalls` (the adapter's): which effect each call id is, and the
 *   calls Interlock holds.
 *
 * Which effect a call is: the n-th call with these arguments in this run. The
 * SDK's callId alone does not survive a resume: a RunState keeps the callIds
 * of the calls pending at its interruption, but every later model turn is
 * asked again, and a model mints new callIds (and a run re-run from its input
 * starts over). Counted in the context, the n-th identical call of a resumed
 * run is the n-th of the crashed one: the same effect. A second identical call
 * in the same run is the (n+1)-th: a new effect, made on purpose. A call the
 * context already knows by its callId (a pending call a RunState re-executes,
 * or the hold check and then the execution of one call) keeps its effect.
 */
import { createHash, randomUUID } from 'node:crypto'
import { canonicalJson } from '../../core/canonical-json.js'
import { UsageError } from '../../core/errors.js'
import { threadName } from '../agent/thread-name.js'

export interface InterlockRunContext {
  /** The conversation: its effects journal to thread `openai-agents/<interlockThread>`. */
  interlockThread?: string
  /** This run across resumes; give the same one to re-run a crashed run from its input. */
  interlockRun?: string
  /** Kept by the adapter: the effect of each call id, and the calls Interlock holds. */
  interlockCalls?: Record<string, CallRecord>
}

export interface CallRecord {
  /** Which call of the run this is: `<digest of target, action, args>#<n>`. */
  nth: string
  /** Set while Interlock holds the call: what to show the person waiting, and the effect operators release. */
  held?: { effectId: string; text: string }
}

/** How a tool finds its thread in the run's context (default: `context.interlockThread`). */
export type ThreadOf<Context> = (context: Context) => string | undefined

export const FRAMEWORK = 'openai-agents'

export function bookOf(context: unknown): InterlockRunContext {
  if (context === null || typeof context !== 'object') {
    throw new UsageError('an Interlock tool needs the run\'s context to be an object carrying interlockThread', {
      hint: "Run the agent with run(agent, input, { context: { interlockThread: '<conversation id>' } }).",
    })
  }
  return context as InterlockRunContext
}

/** The Interlock thread of a run; fails loudly without one, since an effect with no thread cannot be found again on resume. */
export function threadOf<Context>(context: Context, thread?: ThreadOf<Context>): string {
  const raw = thread ? thread(context) : bookOf(context).interlockThread
  if (typeof raw !== 'string' || raw.length === 0) {
    throw new UsageError('no Interlock thread for this run: its context has no interlockThread', {
      hint: "Run the agent with run(agent, input, { context: { interlockThread: '<conversation id>' } }), or give the tool a thread option.",
    })
  }
  return threadName(FRAMEWORK, raw)
}

/** The stable id of this call for the shared core (its effect key): `<run>/<digest>#<n>`. */
export function callOf(context: unknown, callId: string | undefined, target: string, action: string, args: unknown): string {
  if (!callId) throw new UsageError('an Interlock tool was called without the SDK\'s call id', { hint: 'Interlock tools run inside an Agents SDK run, which gives each call its callId.' })
  const book = bookOf(context)
  const calls = (book.interlockCalls ??= {})
  const run = (book.interlockRun ??= randomUUID())
  let record = calls[callId]
  if (!record) {
    const digest = digestOf(target, action, args)
    const n = Object.values(calls).filter((c) => c.nth.startsWith(`${digest}#`)).length + 1
    record = calls[callId] = { nth: `${digest}#${n}` }
  }
  return `${run}/${record.nth}`
}

export function recordHeld(context: unknown, callId: string, held: CallRecord['held']): void {
  const record = bookOf(context).interlockCalls?.[callId]
  if (!record) return
  if (held) record.held = held
  else delete record.held
}

function digestOf(target: string, action: string, args: unknown): string {
  let text: string
  try {
    text = canonicalJson([target, action, args])
  } catch {
    // Not JSON: the core refuses the call; any digest will do.
    text = String(args)
  }
  return createHash('sha256').update(text).digest('hex').slice(0, 16)
}
