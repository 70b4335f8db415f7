/**
 * docs/cli.md, the command reference the README links to: its generated part
 * must be what the built CLI says about itself (run `npm run docs` after
 * changing a command). It is written by src/cli/reference.ts rather than
 * `oclif readme` (the reason is given there), so it must say at least what
 * `oclif readme` would of each flag: its default and the environment variable
 * that sets it.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Config } from '@oclif/core'
import { describe, expect, inject, it } from 'vitest'
import { COMMANDS_END, COMMANDS_FILE, COMMANDS_START, commandReference } from '../../src/cli/reference.js'

describe(`the command reference in ${COMMANDS_FILE}`, () => {
  it('matches the built commands (run `npm run docs`)', async () => {
    const doc = readFileSync(join(import.meta.dirname, '../..', COMMANDS_FILE), 'utf8')
    expect(doc).toContain(COMMANDS_START)
    expect(doc).toContain(COMMANDS_END)
    const section = doc.slice(doc.indexOf(COMMANDS_START) + COMMANDS_START.length, doc.indexOf(COMMANDS_END)).trim()
    expect(section).toBe((await commandReference(inject('cliRoot'))).trim())
  })

  it("names every flag's default and environment variable, as `oclif readme` does", async () => {
    const reference = await commandReference(inject('cliRoot'))
    const config = await Config.load(inject('cliRoot'))
    const commands = config.commands.filter((c) => !c.hidden && !c.pluginName?.startsWith('@oclif/'))
    const missing: string[] = []
    let checked = 0
    for (const c of commands) {
      const heading = `### \`interlock ${c.id.replace(/:/g, ' ')}\``
      const start = reference.indexOf(heading)
      if (start < 0) {
        missing.push(`${c.id}: no section`)
        continue
      }
      const next = reference.indexOf('\n### ', start + 1)
      const section = reference.slice(start, next < 0 ? undefined : next)
      for (const [name, flag] of Object.entries(c.flags)) {
        if (flag.helpGroup === 'GLOBAL' || name === 'json') continue
        const row = section.split('\n').find((l) => l.startsWith(`| \`--${name}`))
        if (!row) {
          missing.push(`${c.id} --${name}: no row`)
          continue
        }
        const fixed = flag.type === 'option' && flag.default !== undefined && typeof flag.default !== 'function'
        if (fixed && !row.includes(String(flag.default))) missing.push(`${c.id} --${name}: default ${String(flag.default)} not named`)
        if (flag.env && !row.includes(flag.env)) missing.push(`${c.id} --${name}: ${flag.env} not named`)
        if (fixed || flag.env) checked++
      }
    }
    // The CLI has such flags (outbox list --limit, relay --key): the check is not empty.
    expect(checked).toBeGreaterThan(3)
    expect(missing).toEqual([])
  })
})
