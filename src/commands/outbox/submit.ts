import { readFileSync } from 'node:fs'
import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { parseDuration } from '../../core/config/policy.js'
import { ExitCode, NotFoundError, UsageError } from '../../core/errors.js'
import type { CommittedVia } from '../../core/outcome.js'
import { CLI_THREAD, submitInput } from '../../core/outbox/submit-input.js'
import { submitEffect, type SubmitResult } from '../../core/outbox/submit.js'

/** What `Outcome: committed` adds, by what was done for this submit (outcome.ts). */
const COMMITTED_HOW: Record<CommittedVia, string> = {
  apply: '',
  query: ' (the service had already applied it)',
  journal: ' before this submit; nothing was sent for it',
}

export default class OutboxSubmit extends BaseCommand<typeof OutboxSubmit> {
  static override needsAllTargets = false
  static override summary = 'Put one effect into the outbox, as an agent does: journaled PROPOSED, for a relay to decide and send.'
  static override description = `For an operator's manual correction, a script or a smoke test. The effect comes from a JSON object ({"thread","target","action","args","premises","key"}) in a file or on stdin (--file -), from flags, or both (flags win). It takes the agent's path: the target checks the args, a secret in them is refused, and the effect is journaled PROPOSED and nothing more. A relay (\`interlock relay\`) then applies the operators' policy (it may be HELD for a release), re-checks the premises and sends it. The thread defaults to "${CLI_THREAD}"; the same thread, target, action, args and key are the same effect, so submitting it again journals nothing new and says where it stands. Only the named target's credentials are needed. --wait waits for the outcome.

Exit codes: 0 journaled (with --wait: committed or held); 1 with --wait: failed, rejected, or not settled in time; 2 bad input; 3 config invalid, or the target's \${VAR} not set; 4 store unreachable; 7 no such target; 10 with --wait: AMBIGUOUS.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --target refunds --action refund --arg charge=ch_1 --arg amount=12.00 --arg currency=USD',
    '<%= config.bin %> <%= command.id %> --file correction.json --json',
    'echo \'{"target":"chat","action":"post","args":{"channel":"C1","text":"smoke test"}}\' | <%= config.bin %> <%= command.id %> --file - --wait --timeout 30s',
  ]
  static override flags = {
    file: Flags.string({ char: 'f', helpValue: '<file>', description: 'JSON object of the effect; - reads stdin.' }),
    target: Flags.string({ description: 'Target, a [targets.<name>] of interlock.toml.' }),
    action: Flags.string({ description: 'Action on the target (e.g. refund, post).' }),
    thread: Flags.string({ description: `Thread (journal) of the effect. Default "${CLI_THREAD}".` }),
    args: Flags.string({ helpValue: '<json>', description: 'Arguments, a JSON object.' }),
    arg: Flags.string({ multiple: true, helpValue: '<name=value>', description: 'One string argument (repeatable), laid over --args.' }),
    premises: Flags.string({ helpValue: '<json>', description: 'Premises, a JSON object, checked again before dispatch.' }),
    key: Flags.string({ description: 'Caller key: two deliberately identical effects differ by it.' }),
    wait: Flags.boolean({ default: false, description: 'Wait until the effect settles, becomes AMBIGUOUS or is HELD (a relay must be running).' }),
    timeout: Flags.string({ default: '60s', helpValue: '<duration>', dependsOn: ['wait'], description: 'Longest wait with --wait, e.g. 30s, 5m.' }),
  }

  async run(): Promise<SubmitResult> {
    const f = this.flags
    const source = f.file === undefined ? undefined : f.file === '-' ? 'stdin' : f.file
    const input = submitInput(f.file === undefined ? undefined : readInput(f.file), f, source ?? 'input')
    const waitMs = f.wait ? waitOf(f.timeout) : undefined
    const interlock = await this.openInterlock()
    let r: SubmitResult
    try {
      r = await submitEffect(interlock, input, { waitMs })
    } finally {
      await interlock.close()
    }
    this.log(r.created ? `Journaled effect ${r.effectId} (${r.action} on ${r.target}, thread ${r.thread}): ${r.state}.` : `Already in the outbox: effect ${r.effectId} is ${r.state}; nothing new was journaled.`)
    if (r.outcome) {
      const o = r.outcome
      const why = o.status === 'held' ? ` by rule "${o.rule}"${o.reason ? `: ${o.reason}` : ''}` : o.status === 'failed' || o.status === 'ambiguous' ? `: ${o.reason}` : o.status === 'rejected' ? `: ${o.violations.join('; ')}` : o.status === 'committed' ? COMMITTED_HOW[o.via] : ''
      this.log(`Outcome: ${o.status}${why}.`)
      if (o.status === 'ambiguous') process.exitCode = ExitCode.AMBIGUOUS
      else if (o.status === 'failed' || o.status === 'rejected') process.exitCode = ExitCode.FAILURE
    } else if (r.created) {
      this.log('A relay applies the policy and sends it; follow it with `interlock outbox show <id>`.')
    }
    return r
  }
}

function readInput(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8')
  } catch (e) {
    throw new NotFoundError(`cannot read ${file === '-' ? 'stdin' : file}: ${(e as Error).message}`, { hint: 'Give a JSON file with --file <file>, or pipe one in with --file -.', cause: e })
  }
}

function waitOf(text: string): number {
  try {
    return parseDuration(text.trim())
  } catch {
    throw new UsageError(`--timeout ${JSON.stringify(text)} is not a duration`, { hint: 'A whole number and a unit: ms, s, m, h or d, e.g. 30s.' })
  }
}
