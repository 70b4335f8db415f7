/**
 * `agent-interlock/testing` under node's own test runner, from the built
 * package (build-once.ts) resolved by its npm name through package.json
 * "exports", as a user's project runs it: `node --test` on a file that runs
 * the contract against an emulator exits 0; on a file whose target breaks
 * its tier's promise, it exits non-zero and says what broke.
 */
import { spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'

const repo = join(import.meta.dirname, '../..')
const fixtures = join(repo, 'test/fixtures/testing-kit')
const packageName = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { name: string }).name
let project = ''

beforeAll(() => {
  assertCliBuilt()
  project = mkdtempSync(join(tmpdir(), 'interlock-testing-kit-'))
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'my-target-tests', private: true, type: 'module' }))
  mkdirSync(join(project, 'node_modules'))
  symlinkSync(inject('cliRoot'), join(project, 'node_modules', packageName), 'dir')
  for (const file of ['stripe.test.mjs', 'broken.test.mjs']) copyFileSync(join(fixtures, file), join(project, file))
})
afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true })
})

function nodeTest(file: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--test', '--test-reporter=tap', file], { cwd: project, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d))
    child.on('error', reject)
    child.on('exit', (code) => resolve({ code, out }))
  })
}

describe('node --test with agent-interlock/testing', () => {
  it('the Stripe target passes its tier contract and its four crash points: exit 0', async () => {
    const run = await nodeTest('stripe.test.mjs')
    expect(run.code, run.out).toBe(0)
    expect(run.out).toMatch(/^# pass 8$/m)
    expect(run.out).toMatch(/^# fail 0$/m)
    expect(run.out).toContain('ok 5 - payments: killed after-premises, recovery leaves the service with the right count')
  })

  it('a tier-1 target whose service ignores the key fails: exit 1, naming the broken promise', async () => {
    const run = await nodeTest('broken.test.mjs')
    expect(run.code, run.out).toBe(1)
    expect(run.out).toMatch(/^# fail 1$/m)
    expect(run.out).toContain('not ok 2 - sms: what its tier promises, by the service\'s own record')
    expect(run.out).toMatch(/tier 1: effect [0-9a-f]{12} applied again under the same effect id/)
  })
})
