/**
 * A relay or a reconcile sweep started with an agent's config ([store]
 * access = "agent") is refused at start as a config error naming the key,
 * before it connects anywhere, instead of having every claim refused by the
 * database over and over.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { interlock } from '../helpers/cli.js'

describe('[store] access = "agent" is for agents only', () => {
  it.each([['relay'], ['reconcile-effects']])('`interlock %s` exits 3 naming store.access, without connecting', async (command) => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-agent-access-'))
    // Port 1 on loopback: a connection attempt would fail differently (exit 4), and slowly.
    writeFileSync(join(cwd, 'interlock.toml'), '[store]\nkind = "postgres"\nurl = "postgres://agent@127.0.0.1:1/app"\naccess = "agent"\n')
    const run = await interlock([command], { cwd })
    expect(run.code).toBe(3)
    expect(run.stderr).toContain('access = "agent"')
    expect(run.stderr).toContain('--print-grants --relay')
  })
})
