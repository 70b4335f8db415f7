/**
 * Every command of the built CLI explains itself: `--help` shows a
 * description and at least one example, and `-h` shows the same. The list comes from the built
 * package (oclif's view of dist/commands), so a new command is checked
 * without touching this file.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Config } from '@oclif/core'
import { beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'

beforeAll(assertCliBuilt)

describe('every command --help', () => {
  it('has a summary, a description and at least one example, and --help and -h print them', async () => {
    const config = await Config.load(inject('cliRoot'))
    const commands = config.commands.filter((c) => !c.pluginName?.startsWith('@oclif/'))
    expect(commands.map((c) => c.id)).toEqual(expect.arrayContaining(['check', 'init', 'config:show']))
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-help-'))
    const missing: string[] = []
    await Promise.all(
      commands.map(async (c) => {
        if (!c.summary?.trim()) missing.push(`${c.id}: no summary`)
        if (!c.description?.trim()) missing.push(`${c.id}: no description`)
        if ((c.examples ?? []).length === 0) missing.push(`${c.id}: no example`)
        const run = await interlock([...c.id.split(':'), '--help'], { cwd })
        if (run.code !== 0) missing.push(`${c.id}: --help exited ${run.code}: ${run.stderr}`)
        else if (!/^DESCRIPTION$/m.test(run.stdout) || !/^EXAMPLES$/m.test(run.stdout)) missing.push(`${c.id}: --help shows no DESCRIPTION or EXAMPLES`)
        const short = await interlock([...c.id.split(':'), '-h'], { cwd })
        if (short.code !== 0 || short.stdout !== run.stdout) missing.push(`${c.id}: -h exited ${short.code} and differs from --help: ${short.stderr}`)
      }),
    )
    expect(missing.sort()).toEqual([])
    // Two CLI starts per command, all at once: on a loaded two-core runner that is minutes, not seconds.
  }, 240_000)
})
