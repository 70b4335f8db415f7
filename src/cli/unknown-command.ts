/**
 * A mistyped command: a usage error (exit 2) in the CLI's own format, with the
 * closest commands as the hint ("Did you mean `interlock outbox status`?"),
 * as JSON on stdout under --json. Reached from oclif's command_not_found hook
 * (hooks/command-not-found.ts) and from help for a command that does not
 * exist (help.ts).
 *
 * `@oclif/plugin-not-found` is not registered for this: off a terminal its
 * message names no suggestion, in oclif's own format, with exit 127; on a
 * terminal it offers to run its guess at once, Enter meaning yes, and a guessed
 * `install` or `reconcile-effects` changes a database. Here the operator reads
 * the suggestion and types the command.
 */
import type { Interfaces } from '@oclif/core'
import { UsageError } from '../core/errors.js'
import { describeFailure, failureEnvelope, formatFailure } from './error-output.js'
import { suggestCommands, type CommandCandidate } from './suggest-command.js'

/** Words that are flags of the binary, not commands: `interlock --version`. */
const ROOT_FLAGS: Readonly<Record<string, string>> = { version: '--version' }

/** Prints the error and throws it, marked as printed, with exit code 2. */
export function unknownCommand(id: string, argv: readonly string[], config: Interfaces.Config): never {
  const error = describeUnknown(id, config)
  const failure = describeFailure(error)
  if (argv.includes('--json')) process.stdout.write(`${JSON.stringify(failureEnvelope(failure), null, 2)}\n`)
  else process.stderr.write(`${formatFailure(failure, process.env.INTERLOCK_DEBUG === '1')}\n`)
  // Printed above, in our format: oclif exits with the code and prints nothing more.
  throw Object.assign(error, { oclif: { exit: failure.exitCode }, skipOclifErrorHandling: true })
}

function describeUnknown(id: string, config: Interfaces.Config): UsageError {
  const bin = config.bin
  const words = id.split(':')
  const typed = `${bin} ${words.join(' ')}`
  const suggestions = suggestCommands(id, candidates(config)).map((s) => `\`${bin} ${s.words.join(' ')}\``)
  // `interlock config show extra`: a command that takes no arguments was given one.
  const command = suggestions.length === 0 ? longestCommand(words, config) : undefined
  if (command) {
    const name = `${bin} ${words.slice(0, command).join(' ')}`
    return new UsageError(`unexpected argument \`${words.slice(command).join(' ')}\` for \`${name}\``, {
      hint: `Run \`${name} --help\` for the flags and arguments it takes.`,
      context: { command: typed },
    })
  }
  const list = `\`${bin} --help\` lists every command.`
  // A flag of the binary itself typed as a command (`interlock version`).
  const flag = words.length === 1 ? ROOT_FLAGS[words[0]!] : undefined
  const guess = flag ? `Did you mean \`${bin} ${flag}\`? ` : suggestions.length > 0 ? `Did you mean ${suggestions.join(' or ')}? ` : ''
  return new UsageError(`unknown command \`${typed}\``, {
    hint: `${guess}${list}`,
    context: { command: typed },
  })
}

/** How many leading words name a command, when some do. */
function longestCommand(words: readonly string[], config: Interfaces.Config): number | undefined {
  for (let k = words.length - 1; k > 0; k--) if (config.findCommand(words.slice(0, k).join(':'))) return k
  return undefined
}

function candidates(config: Interfaces.Config): CommandCandidate[] {
  const byId = new Map<string, CommandCandidate>()
  for (const topic of config.topics) if (!topic.hidden) byId.set(topic.name, { id: topic.name, takesArgs: false })
  for (const command of config.commands) {
    if (command.hidden) continue
    byId.set(command.id, { id: command.id, takesArgs: command.strict === false || Object.keys(command.args ?? {}).length > 0 })
  }
  return [...byId.values()]
}
