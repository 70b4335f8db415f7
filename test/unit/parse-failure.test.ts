/**
 * oclif's parse errors as usage errors: each of the messages oclif 4 throws
 * becomes E_USAGE (exit 2) naming the flag, with a hint saying what it takes,
 * and a mistyped flag gets the closest one.
 */
import { Errors } from '@oclif/core'
import { describe, expect, it } from 'vitest'
import { closestFlag, parseFailure, type FlagFacts } from '../../src/cli/parse-failure.js'
import { ExitCode, UsageError } from '../../src/core/errors.js'

const FLAGS: Record<string, FlagFacts> = {
  help: { type: 'boolean' },
  json: { type: 'boolean' },
  config: { type: 'option', char: 'c', helpValue: '<file>' },
  limit: { type: 'option', min: 1, max: 10_000 },
  page: { type: 'option', min: 1 },
  state: { type: 'option', multiple: true },
  'log-format': { type: 'option', options: ['text', 'json'] },
  out: { type: 'option', helpValue: '<file>' },
}
const COMMAND = { name: 'interlock outbox list', flags: FLAGS }

function failure(message: string, parse = false): UsageError {
  const error = parse ? Object.assign(new Errors.CLIError(`${message}\nSee more help with --help`), { parse: {} }) : new Errors.CLIError(message)
  return parseFailure(error, COMMAND)
}

describe('parseFailure', () => {
  it.each([
    ['Parsing --limit \n\tExpected an integer greater than or equal to 1 but received: -1\nSee more help with --help', false,
      'bad value for --limit: expected an integer greater than or equal to 1 but received: -1', '--limit takes a whole number from 1 to 10000.'],
    ['Parsing --page \n\tExpected an integer but received: soon\nSee more help with --help', false,
      'bad value for --page: expected an integer but received: soon', '--page takes a whole number of at least 1.'],
    ['Flag --limit expects a value', false, '--limit needs a value', 'Give it one: --limit takes a whole number from 1 to 10000.'],
    ['Flag --log-format expects one of these values: text, json', false, '--log-format needs a value', 'Give it one: --log-format takes one of: text, json.'],
    ['Flag --state expects a value', false, '--state needs a value', 'Give it one: --state takes a value (repeatable): --state <value> or --state=<value>.'],
    ['Flag --limit can only be specified once', false, '--limit given more than once', 'Give --limit once'],
    ['Expected --log-format=xml to be one of: text, json', true, 'bad value for --log-format: "xml" is not one of text, json', '--log-format takes one of: text, json.'],
    ['The following error occurred:\n  Missing required flag out', true, '--out is required', '--out takes a value: --out <file> or --out=<file>.'],
    ['Nonexistent flag: --jsn', true, 'unknown flag --jsn for `interlock outbox list`', 'Did you mean `--json`?'],
    ['Nonexistent flags: --limt, --frobnicate', true, 'unknown flags --limt, --frobnicate for `interlock outbox list`', 'Did you mean `--limit`?'],
    ['Missing 1 required arg:\nid  Effect id', true, 'Missing 1 required arg:\nid  Effect id', 'Run `interlock outbox list --help`'],
  ])('%j → a usage error naming the flag', (oclif, parse, message, hint) => {
    const e = failure(oclif, parse)
    expect(e).toBeInstanceOf(UsageError)
    expect(e).toMatchObject({ code: 'E_USAGE', exitCode: ExitCode.USAGE, message })
    expect(e.hint).toContain(hint)
    expect(e.hint).toContain('Run `interlock outbox list --help` for the flags and arguments it takes.')
  })

  it('reads the words, not the colours oclif adds on a terminal', () => {
    const e = failure('The following error occurred:\n  \u001b[2mMissing required flag out\u001b[22m', true)
    expect(e.message).toBe('--out is required')
  })

  it('suggests the closest flag within about one typo in three characters, none when nothing is close', () => {
    expect(closestFlag('--jsn', FLAGS)).toBe('--json')
    expect(closestFlag('--limt', FLAGS)).toBe('--limit')
    expect(closestFlag('--confg=x.toml', FLAGS)).toBe('--config')
    expect(closestFlag('--log-fromat', FLAGS)).toBe('--log-format')
    expect(closestFlag('--frobnicate', FLAGS)).toBeUndefined()
    expect(closestFlag('-json', FLAGS)).toBe('--json')
    expect(closestFlag('-x', FLAGS)).toBeUndefined()
  })
})
