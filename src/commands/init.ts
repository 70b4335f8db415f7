import { writeFileSync } from 'node:fs'
import { relative, resolve } from 'node:path'
import { Flags } from '@oclif/core'
import { BaseCommand } from '../cli/base-command.js'
import { initPlaceholders, initTemplate, parseInitTarget, type InitStore, type InitTarget } from '../core/config/init-template.js'
import { CONFIG_ENV_VAR, CONFIG_FILE_NAME } from '../core/config/load.js'
import { ExitCode, InterlockError } from '../core/errors.js'
import { TARGET_TYPES } from '../core/targets/registry.js'

export interface InitResult {
  path: string
  store: InitStore
  targets: InitTarget[]
  /** Environment variables the file reads, to export before `interlock check`. */
  variables: string[]
  /** Keys written with an example value (owner = "your-org"), to fill in before `interlock check`. */
  placeholders: string[]
}

export default class Init extends BaseCommand<typeof Init> {
  static override summary = 'Write a commented interlock.toml for a store and a set of targets.'
  static override description = `Writes a starting interlock.toml: the store (sqlite or postgres), a gate section, one commented [targets.<name>] table per --target, and commented operator and policy examples. Credentials are \${VAR} references to export in the environment; addresses are the real services', commented, to point elsewhere for staging. Refuses to overwrite an existing file unless --force.

The file is the one every other command reads: --path, else --config, else $INTERLOCK_CONFIG, else ./interlock.toml.

Target types: ${TARGET_TYPES.join(', ')}. Then: fill in the placeholders it names (e.g. owner, repo, bucket, table), export the variables it lists, and run \`interlock check\`.`
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --store postgres --target stripe:refunds --target github --target slack',
    '<%= config.bin %> <%= command.id %> --config deploy/staging.toml --store postgres --target postgres_row:orders --force',
  ]
  static override allowDefaultConfig = true
  static override flags = {
    store: Flags.string({ description: 'Where the journal lives.', options: ['sqlite', 'postgres'], default: 'sqlite' }),
    target: Flags.string({ description: 'A target to add, as type or type:name (repeatable).', multiple: true, helpValue: '<type[:name]>' }),
    path: Flags.string({ description: 'File to write. Default: --config, else $INTERLOCK_CONFIG, else ./interlock.toml.', helpValue: '<file>' }),
    force: Flags.boolean({ description: 'Overwrite the file if it exists.' }),
  }

  async run(): Promise<InitResult> {
    const targets = (this.flags.target ?? []).map(parseInitTarget)
    const store = this.flags.store as InitStore
    const text = initTemplate(store, targets)
    // The file the other commands will read, unless told otherwise (--config carries $INTERLOCK_CONFIG).
    const path = resolve(process.cwd(), this.flags.path ?? (this.flags.config || CONFIG_FILE_NAME))
    try {
      // 'wx' fails when the file exists, in the same call that would create it: no window for a race.
      writeFileSync(path, text, { flag: this.flags.force ? 'w' : 'wx' })
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      if (code === 'EEXIST') {
        throw new InterlockError('E_FILE_EXISTS', ExitCode.CONFLICT, `${path} already exists; not overwriting it`, {
          hint: 'Pass --force to replace it, or --path <file> to write somewhere else.',
          context: { path },
        })
      }
      throw new InterlockError('E_WRITE', ExitCode.FAILURE, `cannot write ${path}: ${(e as Error).message}`, { context: { path }, cause: e })
    }
    const variables = [...new Set([...text.matchAll(/^[a-z_]+ = "\$\{([A-Z0-9_]+)\}"/gm)].map((m) => m[1]!))]
    this.log(`Wrote ${path} (${store} store${targets.length ? `, targets: ${targets.map((t) => `${t.name} (${t.type})`).join(', ')}` : ''}).`)
    if (variables.length > 0) this.log(`Export before running interlock: ${variables.join(', ')}`)
    const placeholders = initPlaceholders(targets)
    const check = `\`interlock check${configArg(path)}\``
    if (targets.length === 0) this.log(`No targets yet: add [targets.<name>] tables, or run \`interlock init --force${configArg(path)} --target <type>\`. Then run ${check}.`)
    else if (placeholders.length > 0) this.log(`Then fill in the placeholders (${placeholders.join(', ')}) and run ${check}.`)
    else this.log(`Then run ${check}.`)
    return { path, store, targets, variables, placeholders }
  }
}

/** ` --config <file>` when a command would not find the file on its own, else nothing. */
function configArg(path: string): string {
  const found = resolve(process.cwd(), process.env[CONFIG_ENV_VAR] || CONFIG_FILE_NAME)
  return found === path ? '' : ` --config ${relative(process.cwd(), path) || path}`
}
