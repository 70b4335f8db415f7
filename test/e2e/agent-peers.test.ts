/**
 * The frameworks are optional peer dependencies: importing `agent-interlock`
 * (the built package, under its npm name) loads none of them, and an
 * adapter's subpath loads no other adapter's framework. Seen through a resolve
 * hook (node:module registerHooks) that records every module resolved.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'

beforeAll(() => assertCliBuilt())

const FRAMEWORKS = { anthropic: /\/node_modules\/@anthropic-ai\/sdk\//, 'ai-sdk': /\/node_modules\/(ai|@ai-sdk\/[^/]+)\// }
const name = (JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { name: string }).name
const project = mkdtempSync(join(tmpdir(), 'interlock-peers-'))
afterAll(() => rmSync(project, { recursive: true, force: true }))

/** The module URLs resolved while importing `specifier` in a project that depends on the package. */
function resolvedBy(specifier: string): string[] {
  mkdirSync(join(project, 'node_modules'), { recursive: true })
  try {
    symlinkSync(inject('cliRoot'), join(project, 'node_modules', name), 'dir')
  } catch {
    // linked by an earlier case
  }
  const script = `
import { registerHooks } from 'node:module'
const seen = []
registerHooks({ resolve(s, c, next) { const r = next(s, c); seen.push(r.url); return r } })
await import(process.env.SPECIFIER)
process.stdout.write(JSON.stringify(seen))`
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, env: { PATH: process.env.PATH ?? '', SPECIFIER: specifier }, encoding: 'utf8' })
  expect(run.status, run.stderr).toBe(0)
  return JSON.parse(run.stdout) as string[]
}

describe('optional peer dependencies', () => {
  it('importing agent-interlock loads no agent framework', () => {
    const urls = resolvedBy(name)
    expect(urls.length).toBeGreaterThan(10)
    for (const pattern of Object.values(FRAMEWORKS)) expect(urls.filter((u) => pattern.test(u))).toEqual([])
  })

  it.each(Object.keys(FRAMEWORKS) as (keyof typeof FRAMEWORKS)[])('agent-interlock/%s loads no other framework', (adapter) => {
    const urls = resolvedBy(`${name}/${adapter}`)
    expect(urls.some((u) => u.includes(`/dist/integrations/${adapter}/`))).toBe(true)
    for (const [other, pattern] of Object.entries(FRAMEWORKS)) if (other !== adapter) expect(urls.filter((u) => pattern.test(u))).toEqual([])
  })
})
