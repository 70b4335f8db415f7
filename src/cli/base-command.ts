/**
 * The one base of every `interlock` command. It owns what commands must not
 * each reinvent: the --config flag and lazy config loading, the --json
 * envelope, redaction of secrets from every output, error formatting with
 * hints, and exit codes. Commands stay a few lines: parse (done here), call
 * the library, print a table or return the typed result.
 *
 * Exit codes: oclif reads `err.exitCode` in --json mode and `err.oclif.exit`
 * otherwise, so catch() sets both, then lets oclif exit without printing
 * (we already printed, in our format). See TOOLCHAIN.md.
 */
import { existsSync } from 'node:fs'
import { format } from 'node:util'
import { Command, Errors, Flags, type Interfaces } from '@oclif/core'
import { CONFIG_ENV_VAR, CONFIG_FILE_NAME, loadConfig } from '../core/config/load.js'
import { redact, redactValue } from '../core/config/redact.js'
import type { InterlockConfig } from '../core/config/types.js'
import { InterlockError } from '../core/errors.js'
import { openInterlock, type Interlock } from '../core/interlock.js'
import { drained } from './drain.js'
import { type FlagFacts, parseFailure } from './parse-failure.js'
import { describeFailure, failureEnvelope, formatFailure } from './error-output.js'
import { type Cell, type Column, DEFAULT_WIDTH, renderTable } from './table.js'

export type CommandFlags<T extends typeof Command> = Interfaces.InferredFlags<
  (typeof BaseCommand)['baseFlags'] & T['flags']
>
export type CommandArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>

export abstract class BaseCommand<T extends typeof Command> extends Command {
  static override enableJsonFlag = true

  static override baseFlags = {
    config: Flags.string({
      char: 'c',
      env: CONFIG_ENV_VAR,
      helpValue: '<file>',
      defaultHelp: async () => './interlock.toml',
      description: 'Config file to use.',
      helpGroup: 'GLOBAL',
    }),
  }

  /**
   * When true and no config file was asked for or found, the command runs on
   * the embedded default (SQLite at ./interlock.db, no targets), as the README
   * promises of the commands that only read the journal (outbox status, list,
   * show, verify, export; config show) and of those that need no config at
   * all (init, demo, the keygens). Commands that act on targets or a shared
   * store leave this false.
   */
  static allowDefaultConfig = false

  /** Said when there is no config file and the command cannot run on the embedded default (the relay: it has no targets). */
  static whyConfigNeeded?: string

  /**
   * False for commands that make no target (outbox status, list, show,
   * verify, export; config show) or only the one they name (outbox submit):
   * a target whose `${VAR}` is not set then stops only what makes it.
   */
  static needsAllTargets = true

  protected flags!: CommandFlags<T>
  protected args!: CommandArgs<T>

  private loadedConfig?: InterlockConfig
  private readonly extraSecrets = new Set<string>()

  override async init(): Promise<void> {
    await super.init()
    const ctor = this.ctor as typeof BaseCommand & T
    let parsed: Awaited<ReturnType<typeof this.parse>>
    try {
      parsed = await this.parse({
        args: ctor.args,
        baseFlags: ctor.baseFlags,
        enableJsonFlag: ctor.enableJsonFlag,
        flags: ctor.flags,
        strict: ctor.strict,
      })
    } catch (error) {
      // Whatever oclif's parser refuses is the user's typing: a usage error naming the flag (exit 2).
      if (error instanceof InterlockError || !(error instanceof Error)) throw error
      throw parseFailure(error, { name: `${this.config.bin} ${(this.id ?? '').split(':').join(' ')}`.trim(), flags: flagFacts(ctor) })
    }
    this.flags = parsed.flags as CommandFlags<T>
    this.args = parsed.args as CommandArgs<T>
  }

  /** interlock.toml, loaded and validated on first use (a ConfigError exits 3). */
  protected async interlockConfig(): Promise<InterlockConfig> {
    if (!this.loadedConfig) {
      this.loadedConfig = loadConfig({
        path: this.flags?.config,
        cwd: process.cwd(),
        env: process.env,
        allowMissing: (this.ctor as typeof BaseCommand).allowDefaultConfig,
        deferTargetVariables: !(this.ctor as typeof BaseCommand).needsAllTargets,
        whyNeeded: (this.ctor as typeof BaseCommand).whyConfigNeeded,
      })
    }
    return this.loadedConfig
  }

  /**
   * The store, targets, policy and operators of interlock.toml, built by the
   * library's front door: no command can drop the config's secrets or policy.
   * The caller closes it.
   */
  protected async openInterlock(): Promise<Interlock> {
    const config = await this.interlockConfig()
    this.sayEmbeddedDefault(config)
    return openInterlock({ config })
  }

  /**
   * Which journal a command runs on when no config file was found: a folder
   * mistaken for another would otherwise show an empty journal, or one
   * created there just now, as if it were the real one. On stderr, so
   * stdout stays the result (`--json`, `--out -`).
   */
  protected sayEmbeddedDefault(config: InterlockConfig): void {
    if (config.file !== undefined || config.store.kind !== 'sqlite') return
    const fresh = !existsSync(config.store.path)
    this.logToStderr(
      `No ${CONFIG_FILE_NAME} found: using the embedded default, the SQLite journal ${config.store.path}` +
        `${fresh ? ' (created now, empty)' : ''} and no targets.`,
    )
  }

  /** Values to scrub from all output besides the config's own secrets (e.g. a token read at run time). */
  protected addSecret(value: string): void {
    if (value) this.extraSecrets.add(value)
  }

  protected secrets(): string[] {
    return [...(this.loadedConfig?.secrets ?? []), ...this.extraSecrets]
  }

  /**
   * Prints a table for people; nothing under --json, where run()'s return
   * value is the output. On a terminal it is fitted to the terminal's width
   * (100 when the terminal does not say), unless the command's --wide asks
   * for every column whole.
   */
  protected table(head: readonly Column[], rows: readonly (readonly Cell[])[]): void {
    const tty = Boolean(process.stdout.isTTY)
    const wide = (this.flags as { wide?: boolean } | undefined)?.wide === true
    const width = tty && !wide ? process.stdout.columns || DEFAULT_WIDTH : undefined
    this.log(renderTable(head, rows, { tty, color: tty && !process.env.NO_COLOR, width }))
  }

  // Every human line goes through here: scrub secrets once, for all commands.
  override log(message: unknown = '', ...args: unknown[]): void {
    super.log(redact(format(message, ...args), this.secrets()))
  }

  override logToStderr(message: unknown = '', ...args: unknown[]): void {
    super.logToStderr(redact(format(message, ...args), this.secrets()))
  }

  protected override toSuccessJson(result: unknown): unknown {
    return redactValue(result, this.secrets())
  }

  protected override async catch(error: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<unknown> {
    // this.exit(n) is a request, not a failure.
    if (error instanceof Errors.ExitError) {
      await drained(process.stdout, process.stderr)
      throw error
    }

    const failure = describeFailure(error, this.id)
    const secrets = this.secrets()
    // A command that already printed its whole result (check's report) fails with the exit code alone.
    const reported = error instanceof InterlockError && (error as { reported?: unknown }).reported === true
    if (reported) {
      // nothing more to print
    } else if (this.jsonEnabled()) {
      this.logJson(redactValue(failureEnvelope(failure), secrets))
    } else {
      const debug = process.env.INTERLOCK_DEBUG === '1'
      process.stderr.write(`${redact(formatFailure(failure, debug), secrets)}\n`)
    }

    process.exitCode = failure.exitCode
    // oclif ends a failed command with process.exit, which drops output a pipe has not taken yet.
    await drained(process.stdout, process.stderr)
    const exit = Object.assign(error instanceof Error ? error : new Error(String(error)), {
      exitCode: failure.exitCode,
      oclif: { exit: failure.exitCode },
      // Already printed above; oclif's handler would print it again, with a stack.
      skipOclifErrorHandling: true,
    })
    throw exit
  }
}

/** Every flag a command takes, by long name: its own, the base flags, and the ones oclif adds. */
function flagFacts(ctor: typeof Command): Record<string, FlagFacts> {
  const facts: Record<string, FlagFacts> = { help: { type: 'boolean' } }
  if (ctor.enableJsonFlag) facts.json = { type: 'boolean' }
  for (const [name, flag] of Object.entries({ ...ctor.baseFlags, ...ctor.flags })) facts[name] = flag as FlagFacts
  return facts
}
