/**
 * An Agents SDK function tool whose side effect goes through Interlock:
 * declared as `tool({ ... })` is, with the target it acts on instead of an
 * `execute`. Its `execute` is the shared core's runToolCall, and what it
 * returns is what the model is told (src/integrations/agent/words.ts).
 *
 * A call a policy rule holds pauses the run through the SDK's own
 * human-in-the-loop: `needsApproval` answers true (the hold check journals it
 * HELD, sending nothing), the run ends with an interruption, the app saves
 * `result.state.toString()`. The release is Interlock's operators', signed
 * (`interlock outbox release <id>`), never the app's `state.approve()`: once
 * released, a resumed run (resumeRun) asks `needsApproval` again, which now
 * answers false, and the call runs. With `onHeld: 'result'` nothing pauses:
 * the model is told the call is held and who releases it.
 */
import { tool, type FunctionTool, type RunContext, type ToolInputParameters, type ToolOptions } from '@openai/agents'
import type { JsonObject } from '../../core/canonical-json.js'
import type { Premises, Receipt } from '../../core/effect.js'
import { InputError } from '../../core/errors.js'
import type { Interlock } from '../../core/interlock.js'
import { holdBeforeRun } from '../agent/hold.js'
import { runToolCall, type CallOptions, type ToolCall } from '../agent/tool-call.js'
import { callOf, recordHeld, threadOf, type ThreadOf } from './run-context.js'

export interface InterlockToolOptions<TParameters extends ToolInputParameters, Context> extends Pick<CallOptions, 'mode' | 'waitMs' | 'log'> {
  /** As for tool(): the name the model calls. */
  name: string
  description: string
  /** As for tool(): a zod object or a JSON schema of an object; the parsed input is the effect's args. */
  parameters: TParameters
  strict?: boolean
  /** The Interlock target (interlock.toml [targets.<name>]) the call acts on. */
  target: string
  /** The target's action (default: the tool's name). */
  action?: string
  /**
   * What the decision rests on, checked right before the effect is sent:
   * 'capture' has the target read it when the call is made (before any hold
   * or approval wait); a function reads it from the run (what a read tool
   * kept in the context).
   */
  premises?: 'capture' | ((args: JsonObject, runContext: RunContext<Context>) => Premises | undefined | Promise<Premises | undefined>)
  /** The text the model gets for a committed effect (default: the receipt as JSON). */
  result?: (receipt: Receipt) => string
  /** Where the run's thread is (default: `context.interlockThread`). */
  thread?: ThreadOf<Context>
  /** A held call pauses the run (default, the SDK's interruption) or is told to the model as a tool result. */
  onHeld?: 'interrupt' | 'result'
}

export function interlockTool<TParameters extends ToolInputParameters, Context = unknown>(
  interlock: Interlock,
  options: InterlockToolOptions<TParameters, Context>,
): FunctionTool<Context, TParameters, string> {
  const action = options.action ?? options.name
  const callOptions: CallOptions = { mode: options.mode, waitMs: options.waitMs, log: options.log }

  const callFor = (runContext: RunContext<Context> | undefined, input: unknown, callId: string | undefined): ToolCall => {
    const context = runContext?.context
    const thread = threadOf(context as Context, options.thread)
    const args = argsOf(input, options.name)
    const premises = options.premises
    return {
      thread,
      target: options.target,
      action,
      args,
      tool: options.name,
      callId: callOf(context, callId, options.target, action, args),
      // The n-th identical call of a run is its own effect, so a call made again is a new one: the model must not be told to repeat it.
      againIsNew: true,
      premises: typeof premises === 'function' ? (a) => premises(a, runContext!) : premises,
      result: options.result,
    }
  }

  const held = async (runContext: RunContext<Context>, input: unknown, callId?: string): Promise<boolean> => {
    const answer = await holdBeforeRun(interlock, callFor(runContext, input, callId), callOptions)
    recordHeld(runContext.context, callId!, answer.held && answer.answer ? { effectId: answer.effectId!, text: answer.answer.text } : undefined)
    return answer.held
  }

  return tool({
    name: options.name,
    description: options.description,
    parameters: options.parameters,
    strict: options.strict,
    needsApproval: options.onHeld === 'result' ? false : held,
    // Interlock's own failures (the journal unreachable, a target not in the config, no thread) end the run
    // instead of reaching the model as "an error occurred": the call's fate is then not known here.
    errorFunction: null,
    execute: async (input: unknown, runContext?: RunContext<Context>, details?: { toolCall?: { callId?: string } }) => {
      const answer = await runToolCall(interlock, callFor(runContext, input, details?.toolCall?.callId), callOptions)
      return answer.text
    },
  } as ToolOptions<TParameters, Context>) as FunctionTool<Context, TParameters, string>
}

function argsOf(input: unknown, name: string): JsonObject {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new InputError(`the ${name} tool's input must be an object (its parameters an object schema): its fields are the effect's args`)
  }
  return input as JsonObject
}
