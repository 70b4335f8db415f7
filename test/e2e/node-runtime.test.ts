/**
 * The built binary under a Node.js it does not support (the machine's own
 * /usr/bin/node, Node 20): it says so and exits 3 before it loads anything
 * built for the supported ones, instead of dying on better-sqlite3's
 * NODE_MODULE_VERSION with "This is a bug". And `--version` names the Node
 * it runs on.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'

const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { name: string; version: string }
/** A Node older than every supported one; CI machines come with it. */
const OLD_NODE = '/usr/bin/node'

let cwd: string
beforeAll(() => {
  assertCliBuilt()
  cwd = mkdtempSync(join(tmpdir(), 'interlock-node-'))
})
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

function run(node: string, args: string[]) {
  return spawnSync(node, [join(inject('cliRoot'), 'bin', 'run.js'), ...args], {
    cwd,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: cwd, NO_COLOR: '1' },
    timeout: 60_000,
  })
}

describe('the Node.js it runs on', () => {
  it('under Node 20: "Interlock needs Node.js 22 or 24" on stderr, exit 3, nothing run', () => {
    const version = spawnSync(OLD_NODE, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim()
    expect(version, `${OLD_NODE} should be a Node.js 20`).toMatch(/^20\./)
    const demo = run(OLD_NODE, ['demo', '--scenario', 'local'])
    expect(demo.stderr).toContain(`Interlock needs Node.js 22 or 24; this is ${version}`)
    expect(demo.stderr).toContain('Try this: Run it with Node.js 22 or 24')
    expect(demo.stderr).not.toMatch(/NODE_MODULE_VERSION|This is a bug/)
    expect(demo.stdout).toBe('')
    expect(demo.status).toBe(3)

    // --json: the refusal in the envelope every failure has, on stdout.
    const json = run(OLD_NODE, ['outbox', 'status', '--json'])
    expect(json.status).toBe(3)
    expect(JSON.parse(json.stdout)).toEqual({
      error: {
        code: 'E_NODE_VERSION',
        exitCode: 3,
        message: `Interlock needs Node.js 22 or 24; this is ${version}`,
        hint: 'Run it with Node.js 22 or 24 (https://nodejs.org/en/download).',
        context: { supported: '22 or 24', running: version },
      },
    })

    // Even --version is refused: it would name a Node the commands cannot run on.
    expect(run(OLD_NODE, ['--version']).status).toBe(3)
  })

  it('--version names the package, the platform and the Node it runs on', () => {
    const version = run(process.execPath, ['--version'])
    expect(version.stderr).toBe('')
    expect(version.status).toBe(0)
    expect(version.stdout.trim()).toBe(`${pkg.name}/${pkg.version} ${process.platform}-${process.arch} node-v${process.versions.node}`)
  })
})
