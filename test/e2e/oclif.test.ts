/**
 * The built CLI as an oclif user expects it: a mistyped command is a usage
 * error in the CLI's own format with the closest commands as its hint; every
 * topic has its own description; `-h` is `--help`; bash completion completes
 * commands and flags, and zsh's lists them.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Config } from '@oclif/core'
import { beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'

beforeAll(assertCliBuilt)

function folder(): string {
  return mkdtempSync(join(tmpdir(), 'interlock-oclif-'))
}

describe('a mistyped command', () => {
  it('exits 2 with `Error (E_USAGE)` and a `Try this:` naming the closest command, nothing else', async () => {
    const run = await interlock(['outbx', 'status'], { cwd: folder() })
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toBe(
      'Error (E_USAGE): unknown command `interlock outbx status`\n' +
        'Try this: Did you mean `interlock outbox status`? `interlock --help` lists every command.\n',
    )
  })

  it('keeps the arguments in the suggestion, offers every close command, and names none when none is close', async () => {
    const cwd = folder()
    const show = await interlock(['outbox', 'shw', '3f9a'], { cwd })
    expect(show.code).toBe(2)
    expect(show.stderr).toContain('Did you mean `interlock outbox show 3f9a`?')
    const keygen = await interlock(['keygen', '--name', 'alice'], { cwd })
    expect(keygen.code).toBe(2)
    expect(keygen.stderr).toContain('Did you mean `interlock notary keygen` or `interlock operator keygen` or `interlock relay keygen`?')
    const none = await interlock(['frobnicate'], { cwd })
    expect(none.code).toBe(2)
    expect(none.stderr).toBe('Error (E_USAGE): unknown command `interlock frobnicate`\nTry this: `interlock --help` lists every command.\n')
  })

  it('an extra argument to a command that takes none says so', async () => {
    const run = await interlock(['config', 'show', 'extra'], { cwd: folder() })
    expect(run.code).toBe(2)
    expect(run.stderr).toBe(
      'Error (E_USAGE): unexpected argument `extra` for `interlock config show`\n' +
        'Try this: Run `interlock config show --help` for the flags and arguments it takes.\n',
    )
  })

  it('under --json prints the error envelope on stdout', async () => {
    const run = await interlock(['outbox', 'stauts', '--json'], { cwd: folder() })
    expect(run.code).toBe(2)
    expect(run.stderr).toBe('')
    expect(JSON.parse(run.stdout)).toEqual({
      error: {
        code: 'E_USAGE',
        exitCode: 2,
        message: 'unknown command `interlock outbox stauts`',
        hint: 'Did you mean `interlock outbox status`? `interlock --help` lists every command.',
        context: { command: 'interlock outbox stauts' },
      },
    })
  })

  it('help for a command that does not exist is the same usage error', async () => {
    const cwd = folder()
    for (const args of [['help', 'outbx'], ['outbx', '--help'], ['outbox', 'stauts', '-h']]) {
      const run = await interlock(args, { cwd })
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr, args.join(' ')).toMatch(/^Error \(E_USAGE\): unknown command `interlock outbo?x[^`]*`\nTry this: Did you mean `interlock outbox( status)?`\?/)
    }
  })
})

describe('root help', () => {
  it("gives every topic its own description, not one of its commands' summaries", async () => {
    const config = await Config.load(inject('cliRoot'))
    const shown = config.commands.filter((c) => !c.hidden)
    const topics = config.topics.filter((t) => !t.hidden && !t.name.includes(':') && shown.some((c) => c.id.startsWith(`${t.name}:`)))
    expect(topics.map((t) => t.name).sort()).toEqual(expect.arrayContaining(['config', 'operator', 'outbox', 'relay']))
    const run = await interlock(['--help'], { cwd: folder() })
    expect(run.code).toBe(0)
    const section = run.stdout.slice(run.stdout.indexOf('TOPICS'), run.stdout.indexOf('COMMANDS')).replace(/\s+/g, ' ')
    for (const topic of topics) {
      const summaries = config.commands.filter((c) => c.id.startsWith(`${topic.name}:`)).map((c) => c.summary)
      expect(topic.description, topic.name).toBeTruthy()
      expect(summaries, topic.name).not.toContain(topic.description)
      expect(section).toContain(`${topic.name} ${topic.description}`)
    }
  })

  it('-h is --help, for the CLI and for a topic', async () => {
    const cwd = folder()
    for (const args of [[], ['outbox'], ['relay']]) {
      const long = await interlock([...args, '--help'], { cwd })
      const short = await interlock([...args, '-h'], { cwd })
      expect(short.code, args.join(' ')).toBe(0)
      expect(short.stdout, args.join(' ')).toBe(long.stdout)
    }
  })
})

describe('shell completion', () => {
  it('bash completes commands under a topic and their flags', async () => {
    const home = folder()
    expect((await interlock(['autocomplete', 'bash'], { cwd: home })).code).toBe(0)
    const setup = await interlock(['autocomplete', 'script', 'bash'], { cwd: home })
    expect(setup.code).toBe(0)
    const complete = (words: string[]): string[] => {
      const script = `${setup.stdout}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _interlock_autocomplete; printf '%s\\n' "\${COMPREPLY[@]}"`
      const run = spawnSync('bash', ['-c', script], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: home } })
      expect(run.status, run.stderr).toBe(0)
      return run.stdout.split('\n').filter(Boolean)
    }
    expect(complete(['interlock', 'outbox', 'st'])).toEqual(['status'])
    expect(complete(['interlock', 'outbox', 'list', '--st'])).toEqual(['--state'])
    expect(complete(['interlock', 'reconcile-'])).toEqual(['reconcile-effects'])
  })

  it("zsh's completion function lists every command and topic with its description", async () => {
    const home = folder()
    const run = await interlock(['autocomplete', 'zsh'], { cwd: home })
    expect(run.code).toBe(0)
    // The function escapes backticks and brackets for zsh (\\\` and \\[): read it back unescaped.
    const zsh = readFileSync(join(home, '.cache', 'interlock', 'autocomplete', 'functions', 'zsh', '_interlock'), 'utf8')
      .replace(/\\\\\\`/g, '`')
      .replace(/\\\\([[\]])/g, '$1')
    const config = await Config.load(inject('cliRoot'))
    const shown = config.commands.filter((c) => !c.hidden && !c.pluginName?.startsWith('@oclif/'))
    // oclif lists every command as a topic too; a topic proper has commands under it.
    const topics = config.topics.filter((t) => shown.some((c) => c.id.startsWith(`${t.name}:`)))
    expect(topics.length).toBeGreaterThan(0)
    for (const t of topics) expect(zsh, t.name).toContain(`"${t.name}[${t.description}]"`)
    // A command that is also a topic (`relay`) is offered under the topic's description.
    for (const c of shown.filter((c) => !topics.some((t) => t.name === c.id))) {
      expect(zsh, c.id).toContain(`"${c.id.split(':').at(-1)}[${c.summary}]"`)
    }
  })
})
