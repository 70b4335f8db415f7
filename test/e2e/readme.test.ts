/**
 * The README is the front door: its generated command reference must be what
 * the built CLI says about itself (run `npm run docs` after changing a command).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, inject, it } from 'vitest'
import { COMMANDS_END, COMMANDS_START, commandReference } from '../../src/cli/reference.js'

describe('README command reference', () => {
  it('matches the built commands (run `npm run docs`)', async () => {
    const readme = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8')
    const section = readme.slice(readme.indexOf(COMMANDS_START) + COMMANDS_START.length, readme.indexOf(COMMANDS_END)).trim()
    expect(section).toBe((await commandReference(inject('cliRoot'))).trim())
  })
})
