/**
 * The package as a user gets it: `npm pack` of the working tree, installed
 * from the tarball into a fresh app of its own (no link to this checkout, its
 * own node_modules resolved from the tarball's declared dependencies), where
 * the library example and `npx interlock demo` run. A file the package needs
 * but does not ship, or a dependency it uses but does not declare, fails here.
 *
 * Two shortcuts keep it to seconds, and neither touches what is proven:
 * - The tarball is packed with --ignore-scripts from a copy of the working
 *   tree (git's files, committed or not) holding build-once.ts's build, where
 *   prepack would run `npm run build` again: the same tsc and oclif manifest,
 *   which build.test.ts runs as prepack does.
 * - The app installs with --ignore-scripts, and better-sqlite3's compiled
 *   addon is copied from this checkout's own, same version, built for this
 *   Node, where its install script would compile it for a minute or more
 *   (prebuilt downloads are unreachable here). The test checks that
 *   better-sqlite3 is the only package in the app with an install script, so
 *   no other skipped script can hide.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'
import { tempRepo, type TempRepo } from '../helpers/git-repo.js'
import { writeLibraryExampleProject } from '../helpers/library-example.js'

const repoRoot = resolve(import.meta.dirname, '../..')
const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { name: string; version: string }

let work: string
let app: string
let installed: string
let packed: string[]
let docs: TempRepo

/** npm with the user's own environment (its cache is warm after `npm ci`), quiet about audits and funding. */
function npm(cwd: string, args: string[]): SpawnSyncReturns<string> {
  return spawnSync('npm', [...args, '--no-audit', '--no-fund'], { cwd, encoding: 'utf8', env: process.env, timeout: 180_000 })
}

/** A program of the app, run as its user runs it: in the app, with a clean environment. */
function inApp(command: string, args: string[]): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd: app, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: app, NO_COLOR: '1' }, timeout: 120_000 })
}

function ok(run: SpawnSyncReturns<string>, what: string): SpawnSyncReturns<string> {
  expect(run.error, what).toBeUndefined()
  expect(run.status, `${what}:\n${run.stdout}\n${run.stderr}`).toBe(0)
  return run
}

/** The working tree as a fresh clone has it (tracked and new files, not ignored ones), plus the build. */
function stageWorkingTree(stage: string): void {
  const listed = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: repoRoot, encoding: 'utf8' })
  expect(listed.status, listed.stderr).toBe(0)
  for (const file of listed.stdout.split('\0').filter(Boolean)) {
    // Deleted in the working tree but still in the index: a clone of the commit to come lacks it too.
    // Not a file: a worktree's node_modules link, which "node_modules/" in .gitignore does not match.
    if (!existsSync(join(repoRoot, file)) || !lstatSync(join(repoRoot, file)).isFile()) continue
    mkdirSync(dirname(join(stage, file)), { recursive: true })
    copyFileSync(join(repoRoot, file), join(stage, file))
  }
  cpSync(join(inject('cliRoot'), 'dist'), join(stage, 'dist'), { recursive: true })
  copyFileSync(join(inject('cliRoot'), 'oclif.manifest.json'), join(stage, 'oclif.manifest.json'))
}

beforeAll(async () => {
  assertCliBuilt()
  work = mkdtempSync(join(tmpdir(), 'interlock-package-'))
  const stage = join(work, 'stage')
  stageWorkingTree(stage)
  const pack = ok(npm(stage, ['pack', '--ignore-scripts', '--json', '--pack-destination', work]), 'npm pack')
  const [result] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[]
  packed = result!.files.map((f) => f.path)
  const tarball = join(work, result!.filename)

  app = join(work, 'app')
  mkdirSync(app)
  writeFileSync(join(app, 'package.json'), `${JSON.stringify({ name: 'an-agent', private: true, type: 'module' }, null, 2)}\n`)
  ok(npm(app, ['install', tarball, '--ignore-scripts', '--prefer-offline']), 'npm install <tarball>')
  installed = join(app, 'node_modules', pkg.name)
  supplyBetterSqlite3()

  docs = await tempRepo({ 'CHANGELOG.md': '# Changes\n', 'src/pricing.ts': 'export function refundLimit(): number {\n  return 100\n}\n' })
}, 240_000)

afterAll(() => {
  docs?.cleanup()
  if (work) rmSync(work, { recursive: true, force: true })
})

/** The addon better-sqlite3's skipped install script would have compiled: this checkout's, once the versions match. */
function supplyBetterSqlite3(): void {
  const ours = dirname(createRequire(join(repoRoot, 'package.json')).resolve('better-sqlite3/package.json'))
  const theirs = join(app, 'node_modules', 'better-sqlite3')
  const version = (dir: string) => (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version
  expect(version(theirs), 'the app resolved another better-sqlite3 than this checkout: the copied addon would not fit').toBe(version(ours))
  mkdirSync(join(theirs, 'build', 'Release'), { recursive: true })
  copyFileSync(join(ours, 'build', 'Release', 'better_sqlite3.node'), join(theirs, 'build', 'Release', 'better_sqlite3.node'))
}

describe(`the packed ${pkg.name}, installed from its tarball into a fresh app`, () => {
  it('ships the LICENSE (Apache-2.0, as package.json says), the README, the binary, the build, the manifest and the schemas; no sources or tests', () => {
    expect(packed).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'package.json', 'bin/run.js', 'dist/core/index.js', 'dist/cli/node-runtime.js', 'oclif.manifest.json', 'interlock.toml.example']))
    expect(packed.some((f) => f.startsWith('schemas/'))).toBe(true)
    expect(packed.filter((f) => /^(src|test|bench|scripts)\//.test(f) || f === 'tsconfig.json')).toEqual([])
    const license = readFileSync(join(installed, 'LICENSE'), 'utf8')
    expect(license).toBe(readFileSync(join(repoRoot, 'LICENSE'), 'utf8'))
    expect(license).toMatch(/^\s+Apache License\n\s+Version 2\.0, January 2004\n/)
    expect(license).toContain('END OF TERMS AND CONDITIONS')
    expect((JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { license: string }).license).toBe('Apache-2.0')
  })

  it('installs without typescript (an optional peer) or its tsc; better-sqlite3 is the only install script', () => {
    expect(existsSync(join(app, 'node_modules', 'typescript'))).toBe(false)
    expect(existsSync(join(app, 'node_modules', '.bin', 'tsc'))).toBe(false)
    expect(existsSync(join(app, 'node_modules', '.bin', 'interlock'))).toBe(true)
    // Nor do its type declarations import it: an app's type check would need it then.
    const declarations = readdirSync(join(installed, 'dist'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.d.ts'))
    expect(declarations.length).toBeGreaterThan(10)
    expect(declarations.filter((f) => /from 'typescript'|import\('typescript'\)/.test(readFileSync(join(installed, 'dist', f), 'utf8')))).toEqual([])
    const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> }
    expect(Object.keys(lock.packages).filter((p) => lock.packages[p]!.hasInstallScript)).toEqual(['node_modules/better-sqlite3'])
  })

  it('runs the library example: the config’s policy holds its effect', async () => {
    writeLibraryExampleProject(app, docs.path)
    const head = await docs.git('rev-parse', 'HEAD')
    const run = ok(inApp(process.execPath, ['example.mjs']), 'the library example')
    expect(JSON.parse(run.stdout.trim().split('\n').pop()!)).toEqual({ status: 'held' })
    expect(await docs.git('rev-parse', 'HEAD')).toBe(head)
  })

  it('a symbol premise says to install typescript', () => {
    const script = `
import { captureRepoPremises } from '${pkg.name}'
try {
  await captureRepoPremises(process.argv[2], ['src/pricing.ts#refundLimit'])
  console.log(JSON.stringify({ captured: true }))
} catch (e) {
  console.log(JSON.stringify({ code: e.code, exitCode: e.exitCode, message: e.message, hint: e.hint }))
}`
    writeFileSync(join(app, 'symbol-premise.mjs'), script)
    const run = ok(inApp(process.execPath, ['symbol-premise.mjs', docs.path]), 'a symbol premise')
    expect(JSON.parse(run.stdout)).toEqual({
      code: 'E_MISSING_PACKAGE',
      exitCode: 3,
      message: 'symbol premises need typescript 5 or 6, which is not installed',
      hint: 'Install it in the project that depends on agent-interlock: npm install typescript@5',
    })
  })

  it('npx interlock demo --scenario local holds, premising whole files without typescript; --version names the Node', () => {
    const demo = ok(inApp('npx', ['--no-install', 'interlock', 'demo', '--scenario', 'local']), 'npx interlock demo --scenario local')
    expect(demo.stdout).toContain('symbol premises need typescript 5 or 6, which is not installed: each decision rests on the whole of src/pricing.ts, not one function')
    expect(demo.stdout).toMatch(/^Verdict: the promise holds: no effect applied twice; 1 COMMITTED, 2 REJECTED, 1 AMBIGUOUS\.$/m)
    const version = ok(inApp('npx', ['--no-install', 'interlock', '--version']), 'npx interlock --version')
    expect(version.stdout.trim()).toBe(`${pkg.name}/${pkg.version} ${process.platform}-${process.arch} node-v${process.versions.node}`)
  })
})
