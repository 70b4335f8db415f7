/**
 * oclif's help, except for a subject that is no command or topic
 * (`interlock outbx --help`, `interlock help outbx`): that is the same usage
 * error, with suggestions, as the mistyped command itself (unknown-command.ts),
 * not oclif's bare "Command outbx not found.".
 */
import { Errors, Help } from '@oclif/core'
import { unknownCommand } from './unknown-command.js'

// The message @oclif/core 4's Help.showHelp fails with when it finds neither command nor topic.
const NOT_FOUND = /^Command (\S+) not found\.$/

export default class InterlockHelp extends Help {
  override async showHelp(argv: string[]): Promise<void> {
    try {
      await super.showHelp(argv)
    } catch (error) {
      const missing = error instanceof Errors.CLIError ? NOT_FOUND.exec(error.message) : null
      if (missing) unknownCommand(missing[1]!, argv, this.config)
      throw error
    }
  }
}
