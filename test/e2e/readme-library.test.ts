/**
 * The README's library example, run as a user runs it: the built package
 * imported by its npm name from a project of its own, against an
 * interlock.toml whose [[policy.rules]] hold the example's effect. The
 * example must build through the front door, so the rule holds it and the
 * repository is left untouched.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'
import { tempRepo, type TempRepo } from '../helpers/git-repo.js'
import { libraryExample, writeLibraryExampleProject } from '../helpers/library-example.js'

/** The name the package is published under (package.json), which the README installs and imports. */
const packageName = (JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { name: string }).name

let repo: TempRepo
let project: string | undefined
beforeAll(async () => {
  assertCliBuilt()
  repo = await tempRepo({ 'CHANGELOG.md': '# Changes\n' })
})
afterAll(() => {
  repo?.cleanup()
  if (project) rmSync(project, { recursive: true, force: true })
})

function readme(): string {
  return readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8')
}

describe("the README's library example", () => {
  it('installs and imports the package by its npm name, which is not the unrelated `interlock` package', () => {
    // `interlock` on the npm registry is someone else's package: following the README must not install it.
    expect(packageName).not.toBe('interlock')
    const text = readme()
    expect(text).toContain(`npm install -g ${packageName}`)
    expect(text).toContain(`npm install ${packageName}`)
    expect(libraryExample()).toContain(`from '${packageName}'`)
    // Every import of Interlock in the docs names the package; none is left under the old name.
    const root = join(import.meta.dirname, '../..')
    const docs = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md') && !/^(node_modules|dist|\.git)\//.test(f))
    expect(docs).toContain('README.md')
    expect(docs.filter((f) => /(from|import\() ?'interlock(\/[^']*)?'/.test(readFileSync(join(root, f), 'utf8')))).toEqual([])
  })

  it("builds from interlock.toml through the front door: the config's policy holds the effect", async () => {
    project = mkdtempSync(join(tmpdir(), 'interlock-readme-'))
    mkdirSync(join(project, 'node_modules'))
    // A scoped name lives one folder down (node_modules/@scope/name).
    mkdirSync(dirname(join(project, 'node_modules', packageName)), { recursive: true })
    symlinkSync(inject('cliRoot'), join(project, 'node_modules', packageName), 'dir')
    writeLibraryExampleProject(project, repo.path)
    const head = await repo.git('rev-parse', 'HEAD')
    const run = spawnSync(process.execPath, ['example.mjs'], { cwd: project, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: project } })
    expect(run.status, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout.trim().split('\n').pop()!)).toEqual({ status: 'held' })
    expect(await repo.git('rev-parse', 'HEAD')).toBe(head)
    expect(repo.read('CHANGELOG.md')).toBe('# Changes\n')
  })
})
