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

/** The package's name and version (package.json), which the README installs and imports. */
const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { name: string; version: string }
const packageName = pkg.name
/** What `npm pack` writes: the README installs this file, the package not being on the npm registry yet. */
const tarball = `${packageName.replace(/^@/, '').replace('/', '-')}-${pkg.version}.tgz`

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
  it('installs the tarball `npm pack` writes and imports the package by its name, which is not the unrelated `interlock` package', () => {
    // `interlock` on the npm registry is someone else's package: following the README must not install it.
    expect(packageName).not.toBe('interlock')
    const text = readme()
    expect(text).toContain('npm ci && npm pack')
    expect(text).toContain(`npm install <path-to>/${tarball}`)
    expect(text).toContain(`npm install -g <path-to>/${tarball}`)
    expect(libraryExample()).toContain(`from '${packageName}'`)
    // The example awaits at top level: the README says to run it as an ES module (this test runs it as .mjs).
    expect(text.slice(text.indexOf('## As a library'))).toMatch(/ES module[\s\S]*\.mjs[\s\S]*"type": "module"/)
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
