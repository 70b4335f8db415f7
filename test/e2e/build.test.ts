/**
 * `npm run build` as a maintainer runs it, in a copy of the repository: it
 * writes oclif.manifest.json listing every command it compiled, the built CLI
 * starts from that manifest (oclif then loads only the command it runs), and
 * `npm pack` ships it. The manifest is never committed: a stale one would hide
 * the commands added since.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const repo = resolve(import.meta.dirname, '../..')
let copy: string

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), 'interlock-build-'))
  for (const entry of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'interlock.toml.example', 'src', 'bin', 'schemas', 'scripts']) {
    cpSync(join(repo, entry), join(copy, entry), { recursive: true })
  }
  symlinkSync(join(repo, 'node_modules'), join(copy, 'node_modules'), 'dir')
})
afterAll(() => {
  if (copy) rmSync(copy, { recursive: true, force: true })
})

function run(command: string, args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(command, args, { cwd: copy, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: copy, NO_COLOR: '1', ...env } })
}

/** Command ids from the compiled command files, as oclif names them (outbox/list.js → outbox:list, relay/index.js → relay). */
function compiledCommands(): string[] {
  const dir = join(copy, 'dist', 'commands')
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.js'))
    .map((f) => f.replace(/\.js$/, '').replace(/\/index$/, '').split('/').join(':'))
    .sort()
}

describe('npm run build', () => {
  it('writes oclif.manifest.json with every command; the CLI starts from it and lists them all; npm pack ships it', { timeout: 240_000 }, () => {
    const build = run('npm', ['run', 'build'])
    expect(build.status, build.stdout + build.stderr).toBe(0)
    const manifestFile = join(copy, 'oclif.manifest.json')
    expect(existsSync(manifestFile)).toBe(true)

    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { version: string; commands: Record<string, unknown> }
    const pkg = JSON.parse(readFileSync(join(copy, 'package.json'), 'utf8')) as { name: string; version: string }
    expect(manifest.version).toBe(pkg.version)
    const compiled = compiledCommands()
    expect(compiled).toEqual(expect.arrayContaining(['check', 'config:show', 'outbox:status', 'relay']))
    expect(Object.keys(manifest.commands).sort()).toEqual(compiled)

    // oclif's own debug output says where the command list came from.
    const help = run(process.execPath, [join(copy, 'bin', 'run.js'), '--help'], { DEBUG: 'oclif:config:*' })
    expect(help.status, help.stderr).toBe(0)
    expect(help.stderr).toContain(`using manifest from ${manifestFile}`)
    const listed = new Set([...help.stdout.matchAll(/^ {2}(\S+) /gm)].map((m) => m[1]!))
    for (const id of compiled) expect(listed, id).toContain(id.split(':')[0])

    const pack = run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'])
    expect(pack.status, pack.stderr).toBe(0)
    const [packed] = JSON.parse(pack.stdout) as { name: string; files: { path: string }[] }[]
    expect(packed!.name).toBe(pkg.name)
    expect(packed!.files.map((f) => f.path)).toEqual(expect.arrayContaining(['oclif.manifest.json', 'bin/run.js', 'dist/commands/check.js']))
  })

  it('the manifest is not committed', () => {
    const tracked = spawnSync('git', ['ls-files', '--error-unmatch', 'oclif.manifest.json'], { cwd: repo, encoding: 'utf8' })
    expect(tracked.status).not.toBe(0)
    expect(readFileSync(join(repo, '.gitignore'), 'utf8').split('\n')).toContain('oclif.manifest.json')
  })
})
