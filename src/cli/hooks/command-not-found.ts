/** oclif calls this when no command matches what was typed: see unknown-command.ts. */
import type { Hook } from '@oclif/core'
import { unknownCommand } from '../unknown-command.js'

const hook: Hook.CommandNotFound = async function (options) {
  unknownCommand(options.id, options.argv ?? [], options.config)
}

export default hook
