/**
 * Fastify is an optional peer dependency of `agent-interlock/notary`: the
 * subpath exports the Fastify plugin beside the node:http middleware, and
 * importing it loads nothing of Fastify (a service on node:http or Express
 * need not install it). Checked on the built package, under its npm name,
 * through a resolve hook (node:module registerHooks) that records every
 * module resolved.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'

const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as {
  name: string
  peerDependencies: Record<string, string>
  peerDependenciesMeta: Record<string, { optional?: boolean }>
}
let project: string

beforeAll(() => {
  assertCliBuilt()
  project = mkdtempSync(join(tmpdir(), 'interlock-notary-peers-'))
  mkdirSync(join(project, 'node_modules'))
  symlinkSync(inject('cliRoot'), join(project, 'node_modules', pkg.name), 'dir')
})
afterAll(() => rmSync(project, { recursive: true, force: true }))

const HOOK = `
import { registerHooks } from 'node:module'
const seen = []
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.push(r.url); return r } })
const loaded = await import(process.argv[1])
console.log(JSON.stringify({ exports: Object.keys(loaded).sort(), seen, skipOverride: loaded.notaryPlugin?.[Symbol.for('skip-override')] === true }))
`

describe('fastify as an optional peer dependency of the notary', () => {
  it(`'${pkg.name}/notary' exports the Fastify plugin and loads nothing of Fastify`, () => {
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', HOOK, `${pkg.name}/notary`], { cwd: project, encoding: 'utf8' })
    expect(run.status, run.stderr).toBe(0)
    const loaded = JSON.parse(run.stdout) as { exports: string[]; seen: string[]; skipOverride: boolean }
    expect(loaded.exports).toEqual(expect.arrayContaining(['notaryMiddleware', 'notaryPlugin', 'withNotary']))
    expect(loaded.skipOverride).toBe(true)
    expect(loaded.seen.some((u) => u.includes('/dist/core/notary/fastify.js'))).toBe(true)
    expect(loaded.seen.filter((u) => /\/node_modules\/(fastify|@fastify\/[^/]+|avvio|light-my-request)\//.test(u))).toEqual([])
  })

  it('package.json declares fastify as an optional peer', () => {
    expect(pkg.peerDependencies.fastify).toMatch(/^\^5\./)
    expect(pkg.peerDependenciesMeta.fastify).toEqual({ optional: true })
  })
})
