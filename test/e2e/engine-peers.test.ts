/**
 * The durable engines are optional peer dependencies: `agent-interlock`
 * must load without them, and only its `/restate` and `/temporal` subpaths
 * load theirs. Checked on the built package, imported by its npm name from
 * a project of its own, with a resolve hook (node:module registerHooks)
 * recording every module the import resolves.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'

const packageName = (JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { name: string }).name
let project: string

beforeAll(() => {
  assertCliBuilt()
  project = mkdtempSync(join(tmpdir(), 'interlock-peers-'))
  mkdirSync(join(project, 'node_modules'))
  symlinkSync(inject('cliRoot'), join(project, 'node_modules', packageName), 'dir')
})
afterAll(() => rmSync(project, { recursive: true, force: true }))

const HOOK = `
import { registerHooks } from 'node:module'
const seen = []
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.push(r.url); return r } })
const loaded = await import(process.argv[1])
console.log(JSON.stringify({ exports: Object.keys(loaded).sort(), seen }))
`

/** What importing `specifier` from the project resolves, and what it exports. */
function load(specifier: string): { exports: string[]; seen: string[] } {
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', HOOK, specifier], { cwd: project, encoding: 'utf8' })
  expect(run.status, run.stderr).toBe(0)
  return JSON.parse(run.stdout) as { exports: string[]; seen: string[] }
}

const engines = (seen: string[]) => [...new Set(seen.map((u) => /node_modules\/(@restatedev|@temporalio|@dbos-inc)\//.exec(u)?.[1]).filter(Boolean))].sort()

describe('the durable engines as optional peer dependencies', () => {
  it(`'${packageName}' loads no engine`, () => {
    const main = load(packageName)
    expect(main.exports).toContain('openInterlock')
    expect(main.seen.length).toBeGreaterThan(20)
    expect(engines(main.seen)).toEqual([])
  })

  it(`'${packageName}/restate' loads Restate's SDK and nothing of Temporal`, () => {
    const restate = load(`${packageName}/restate`)
    expect(restate.exports).toEqual(expect.arrayContaining(['interlockRun', 'METADATA_EFFECT_ID', 'ERROR_CODES']))
    expect(engines(restate.seen)).toEqual(['@restatedev'])
  })

  it(`'${packageName}/temporal' loads Temporal's activity and common packages and nothing of Restate`, () => {
    const temporal = load(`${packageName}/temporal`)
    expect(temporal.exports).toEqual(expect.arrayContaining(['interlockSubmit', 'activitySleep', 'FAILURE_TYPES']))
    expect(engines(temporal.seen)).toEqual(['@temporalio'])
  })
})
