/**
 * Every mistake typed on the command line is a usage error, as the README's
 * exit-code table says: exit 2, `Error (E_USAGE): <message naming the flag>`
 * and a `Try this:` hint on stderr, or under --json the same code, message
 * and hint in the error envelope on stdout. Mistyped flags get the closest
 * flag, as mistyped commands get the closest command. Run in an empty
 * folder: a flag is judged before any config is looked for.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'

beforeAll(assertCliBuilt)

interface Case {
  command: string[]
  flags: string[]
  message: string
  /** Text the hint holds (it always ends by naming the command's --help). */
  hint: string
}

const CASES: Case[] = [
  { command: ['outbox', 'list'], flags: ['--limit', '-1'], message: 'bad value for --limit: expected an integer greater than or equal to 1 but received: -1', hint: '--limit takes a whole number from 1 to 10000.' },
  { command: ['outbox', 'list'], flags: ['--page=0'], message: 'bad value for --page: expected an integer greater than or equal to 1 but received: 0', hint: '--page takes a whole number of at least 1.' },
  { command: ['check'], flags: ['--timeout', 'soon'], message: 'bad value for --timeout: expected an integer but received: soon', hint: '--timeout takes a whole number from 100 to 600000.' },
  { command: ['relay'], flags: ['--health-port', '70000'], message: 'bad value for --health-port: expected an integer less than or equal to 65535 but received: 70000', hint: '--health-port takes a whole number from 0 to 65535.' },
  { command: ['relay'], flags: ['--concurrency', '0'], message: 'bad value for --concurrency: expected an integer greater than or equal to 1 but received: 0', hint: '--concurrency takes a whole number from 1 to 10000.' },
  { command: ['outbox', 'list'], flags: ['--limit'], message: '--limit needs a value', hint: 'Give it one: --limit takes a whole number from 1 to 10000.' },
  { command: ['relay'], flags: ['--log-format'], message: '--log-format needs a value', hint: 'Give it one: --log-format takes one of: text, json.' },
  { command: ['outbox', 'verify'], flags: ['--relay-key'], message: '--relay-key needs a value', hint: '--relay-key takes a value (repeatable): --relay-key <name>=<public key>' },
  { command: ['outbox', 'list'], flags: ['--jsn'], message: 'unknown flag --jsn for `interlock outbox list`', hint: 'Did you mean `--json`?' },
  { command: ['outbox', 'list'], flags: ['--limt', '3'], message: 'unknown flag --limt for `interlock outbox list`', hint: 'Did you mean `--limit`?' },
  { command: ['outbox', 'submit'], flags: ['--wiat'], message: 'unknown flag --wiat for `interlock outbox submit`', hint: 'Did you mean `--wait`?' },
  { command: ['reconcile-effects'], flags: ['--dryrun'], message: 'unknown flag --dryrun for `interlock reconcile-effects`', hint: 'Did you mean `--dry-run`?' },
  { command: ['config', 'show'], flags: ['--frobnicate'], message: 'unknown flag --frobnicate for `interlock config show`', hint: 'Run `interlock config show --help`' },
  { command: ['check'], flags: ['--only', 'nope'], message: 'bad value for --only: "nope" is not one of store, targets, keys, policy, notify', hint: '--only takes one of: store, targets, keys, policy, notify (repeatable).' },
  { command: ['init'], flags: ['--store', 'mysql'], message: 'bad value for --store: "mysql" is not one of sqlite, postgres', hint: '--store takes one of: sqlite, postgres.' },
  { command: ['outbox', 'list'], flags: ['--limit', '5', '--limit', '6'], message: '--limit given more than once', hint: 'Give --limit once' },
  { command: ['outbox', 'export'], flags: [], message: '--out is required', hint: '--out takes a value: --out <file> or --out=<file>.' },
  { command: ['operator', 'keygen'], flags: ['--name'], message: '--name needs a value', hint: 'Give it one: --name takes a value' },
]

function folder(): string {
  return mkdtempSync(join(tmpdir(), 'interlock-usage-'))
}

describe('a bad flag', () => {
  it.each(CASES)('$command $flags: exit 2, E_USAGE naming the flag, with a hint, in human and --json form', async ({ command, flags, message, hint }) => {
    const cwd = folder()
    const help = `Run \`interlock ${command.join(' ')} --help\` for the flags and arguments it takes.`

    const human = await interlock([...command, ...flags], { cwd })
    expect(human.code, human.stderr).toBe(2)
    expect(human.stdout).toBe('')
    const [first, tryThis, ...rest] = human.stderr.split('\n')
    expect(first).toBe(`Error (E_USAGE): ${message}`)
    expect(tryThis).toMatch(/^Try this: /)
    expect(tryThis).toContain(hint)
    expect(tryThis!.endsWith(help)).toBe(true)
    expect(rest).toEqual([''])

    // --json before the bad flag: a flag missing its value must not swallow it.
    const machine = await interlock([...command, '--json', ...flags], { cwd })
    expect(machine.code, machine.stdout).toBe(2)
    expect(machine.stderr).toBe('')
    const { error } = JSON.parse(machine.stdout)
    expect(error).toMatchObject({ code: 'E_USAGE', exitCode: 2, message, hint: tryThis!.slice('Try this: '.length) })
  })
})

describe('a flag of the binary typed as a command', () => {
  it('`interlock version` points at `interlock --version`, in human and --json form', async () => {
    const cwd = folder()
    const human = await interlock(['version'], { cwd })
    expect(human.code).toBe(2)
    expect(human.stderr).toBe('Error (E_USAGE): unknown command `interlock version`\nTry this: Did you mean `interlock --version`? `interlock --help` lists every command.\n')
    const machine = await interlock(['version', '--json'], { cwd })
    expect(machine.code).toBe(2)
    expect(JSON.parse(machine.stdout).error).toMatchObject({ code: 'E_USAGE', hint: 'Did you mean `interlock --version`? `interlock --help` lists every command.' })
    const version = await interlock(['--version'], { cwd })
    expect(version.code).toBe(0)
    expect(version.stdout).toMatch(/^agent-interlock\/\d/)
  })
})
