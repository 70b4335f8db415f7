/**
 * The README's library example, run as a user runs it: the built package
 * imported as `interlock` from a project of its own, against an
 * interlock.toml whose [[policy.rules]] hold the example's effect. The
 * example must build through the front door, so the rule holds it and the
 * repository is left untouched.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { assertCliBuilt } from '../helpers/cli.js'
import { tempRepo, type TempRepo } from '../helpers/git-repo.js'

let repo: TempRepo
beforeAll(async () => {
  assertCliBuilt()
  repo = await tempRepo({ 'CHANGELOG.md': '# Changes\n' })
})
afterAll(() => repo?.cleanup())

/** The first TypeScript block of the README's "As a library" section. */
function libraryExample(): string {
  const readme = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## As a library'))
  const block = /```ts\n([\s\S]*?)```/.exec(section)
  if (!block) throw new Error('the README has no ```ts block under "## As a library"')
  return block[1]!
}

describe("the README's library example", () => {
  it("builds from interlock.toml through the front door: the config's policy holds the effect", async () => {
    const project = mkdtempSync(join(tmpdir(), 'interlock-readme-'))
    mkdirSync(join(project, 'node_modules'))
    symlinkSync(inject('cliRoot'), join(project, 'node_modules', 'interlock'), 'dir')
    writeFileSync(
      join(project, 'interlock.toml'),
      `[store]
path = "journal.db"

[targets.docs]
type = "repo"
path = "${repo.path}"

[[operators]]
name = "alice"
public_key = "${generateKeyPair('operator', 'alice').publicKey}"

[[policy.rules]]
name = "docs-review"
target = "docs"
`,
    )
    // The example as printed, then one line to report what it got.
    writeFileSync(join(project, 'example.mjs'), `${libraryExample()}\nconsole.log(JSON.stringify({ status: outcome.status }))\n`)
    const head = await repo.git('rev-parse', 'HEAD')
    const run = spawnSync(process.execPath, ['example.mjs'], { cwd: project, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: project } })
    expect(run.status, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout.trim().split('\n').pop()!)).toEqual({ status: 'held' })
    expect(await repo.git('rev-parse', 'HEAD')).toBe(head)
    expect(repo.read('CHANGELOG.md')).toBe('# Changes\n')
  })
})
