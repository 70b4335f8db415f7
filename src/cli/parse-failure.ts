/**
 * oclif's parse errors → usage errors in the CLI's own terms (exit 2, code
 * E_USAGE, a message naming the flag and a `Try this:` hint), as the README's
 * exit-code table promises for every mistake on the command line. Pure, so
 * the wording is tested without spawning the binary.
 *
 * oclif throws two kinds: errors carrying `parse` (unknown flag, missing
 * argument, a value not among a flag's options) and plain CLIErrors (a flag
 * without its value, a bad integer, a flag given twice). Both are the user's
 * typing, never our failure; each is read from the words oclif 4 uses and
 * said again naming the flag, with what it takes. A message not recognised
 * keeps oclif's words, still as a usage error.
 */
import { stripVTControlCharacters } from 'node:util'
import { editDistance } from '../core/edit-distance.js'
import { UsageError } from '../core/errors.js'

/** What the hints need to know of a flag (a subset of oclif's flag definition). */
export interface FlagFacts {
  type?: string
  char?: string
  options?: readonly string[]
  multiple?: boolean
  /** How --help shows its value (`<file>`). */
  helpValue?: string | string[]
  min?: number
  max?: number
}

export interface ParsedCommand {
  /** What is typed to run it: `interlock outbox list`. */
  name: string
  /** Every flag it takes by long name (base flags, --json and --help included). */
  flags: Readonly<Record<string, FlagFacts>>
}

const SEE_HELP = /\n?See more help with --help\s*$/

export function parseFailure(error: Error, command: ParsedCommand): UsageError {
  // oclif dims part of some messages on a terminal: the words are what is matched and shown.
  const message = stripVTControlCharacters(error.message).replace(SEE_HELP, '').trim()
  const help = `Run \`${command.name} --help\` for the flags and arguments it takes.`
  const usage = (text: string, hint: string, context: Record<string, unknown> = {}) =>
    new UsageError(text, { hint, context: { command: command.name, ...context }, cause: error })

  let m = /^Nonexistent flags?: (.+)$/.exec(message)
  if (m) {
    const typed = m[1]!.split(', ')
    const guesses = typed.map((t) => closestFlag(t, command.flags)).filter((g): g is string => g !== undefined)
    const guess = guesses.length > 0 ? `Did you mean ${guesses.map((g) => `\`${g}\``).join(' or ')}? ` : ''
    return usage(`unknown flag${typed.length === 1 ? '' : 's'} ${typed.join(', ')} for \`${command.name}\``, `${guess}${help}`, { flags: typed })
  }
  m = /^Flag --(\S+) expects (?:a value|one of these values: .*)$/.exec(message)
  if (m) {
    const flag = m[1]!
    return usage(`--${flag} needs a value`, `Give it one: ${takes(flag, command.flags[flag])} ${help}`, { flag })
  }
  m = /^Parsing --(\S+)\s*\n\s*([\s\S]+)$/.exec(message)
  if (m) {
    const flag = m[1]!
    return usage(`bad value for --${flag}: ${lowerFirst(m[2]!.trim())}`, `${takes(flag, command.flags[flag])} ${help}`, { flag })
  }
  m = /^Expected --([^=\s]+)=([\s\S]*) to be one of: (.+)$/.exec(message)
  if (m) {
    const flag = m[1]!
    return usage(`bad value for --${flag}: ${JSON.stringify(m[2])} is not one of ${m[3]}`, `${takes(flag, command.flags[flag])} ${help}`, { flag })
  }
  m = /^Flag --(\S+) can only be specified once$/.exec(message)
  if (m) {
    const flag = m[1]!
    return usage(`--${flag} given more than once`, `Give --${flag} once: only flags marked (repeatable) in --help take several. ${help}`, { flag })
  }
  m = /^The following errors? occurred:\s*Missing required flag (\S+)$/.exec(message)
  if (m) {
    const flag = m[1]!
    return usage(`--${flag} is required`, `${takes(flag, command.flags[flag])} ${help}`, { flag })
  }
  // "The following error occurred:\n  Missing required flag out" and the like: oclif's words, without the preamble.
  const plain = message.replace(/^The following errors? occurred:\s*/, '').replace(/\n\s+/g, '\n')
  return usage(plain, help)
}

/** The flag a mistyped one most likely meant, as typed (`--json`), when one is close enough. */
export function closestFlag(typed: string, flags: Readonly<Record<string, FlagFacts>>): string | undefined {
  const word = typed.replace(/^-+/, '').replace(/=.*$/, '')
  if (!typed.startsWith('--')) {
    // A short flag: only an exact long name typed with one dash (`-json`) is worth naming.
    return word in flags ? `--${word}` : undefined
  }
  let best: { name: string; score: number } | undefined
  for (const name of Object.keys(flags)) {
    const score = editDistance(word, name)
    if (score <= tolerance(name) && (!best || score < best.score)) best = { name, score }
  }
  return best && `--${best.name}`
}

/** What a flag takes, said from its definition. */
function takes(name: string, flag: FlagFacts | undefined): string {
  if (!flag) return `--${name} takes a value.`
  const many = flag.multiple ? ' (repeatable)' : ''
  if (flag.options && flag.options.length > 0) return `--${name} takes one of: ${flag.options.join(', ')}${many}.`
  if (flag.min !== undefined || flag.max !== undefined) {
    const range =
      flag.min !== undefined && flag.max !== undefined
        ? `from ${flag.min} to ${flag.max}`
        : flag.min !== undefined
          ? `of at least ${flag.min}`
          : `of at most ${flag.max}`
    return `--${name} takes a whole number ${range}${many}.`
  }
  const value = typeof flag.helpValue === 'string' ? flag.helpValue : '<value>'
  return `--${name} takes a value${many}: --${name} ${value} or --${name}=${value}.`
}

/** Typos allowed for a flag name: about one in three characters, at least one (as for commands). */
function tolerance(name: string): number {
  return Math.max(1, Math.floor(name.length / 3))
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1)
}
