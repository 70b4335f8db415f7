/**
 * A target module (README.md's Jira module) used by the built binary the way
 * a user's project uses it: `interlock check` makes it and reports on it,
 * `interlock outbox submit` proposes to it and `interlock relay` sends,
 * `interlock reconcile-effects` finishes what a relay SIGKILLed in flight
 * left, asking the module's own query, and a script's `openInterlock()` from
 * the installed package submits through it, and `interlock mcp-proxy` serves
 * the tools it declares to an MCP client, recovering at start what a proxy
 * SIGKILLed in flight left. Judged by the emulator's issues.
 * A module that cannot be loaded stops those commands with exit 3.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { toEffect } from '../../src/core/effect.js'
import { JiraEmulator } from '../emulators/jira.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { jiraCall } from '../helpers/declared-apis.js'
import { JIRA_MODULE, jiraModuleToml, moduleProject, type ModuleProject } from '../helpers/module-project.js'
import { httpClient, proxyClient, proxyOverHttp, rawRequest, INITIALIZE } from '../helpers/mcp.js'
import { relayReady, startRelayProc } from '../helpers/relay-procs.js'
import { osUserPrincipal } from '../../src/integrations/mcp/principal.js'

interface Row {
  id: string
  status: 'pass' | 'warn' | 'fail'
  detail: string
}

let jira: JiraEmulator
let project: ModuleProject
let env: Record<string, string>

beforeAll(async () => {
  assertCliBuilt()
  jira = await new JiraEmulator().start()
  jira.searchLagMs = 300
  project = moduleProject({ 'targets/jira.js': JIRA_MODULE })
  writeKeyFile(join(project.dir, 'relay.key'), generateKeyPair('relay', 'relay-1'))
  project.write('interlock.toml', `[store]\npath = "journal.db"\n\n[relay]\nkey = "relay.key"\n\n${jiraModuleToml(jira.url, 700)}`)
  env = { JIRA_BASIC_AUTH: jira.basicAuth }
})
afterAll(async () => {
  await jira.close()
  project.cleanup()
})

const cli = (args: string[], more: Record<string, string> = {}) => interlock(args, { cwd: project.dir, env: { ...env, ...more } })

async function submit(thread: string): Promise<string> {
  const call = jiraCall(thread)
  const run = await cli(['outbox', 'submit', '--target', 'jira', '--action', call.action, '--thread', thread, '--args', JSON.stringify(call.args), '--json'])
  expect(run.code, run.stderr).toBe(0)
  return toEffect(call).id
}

async function state(id: string): Promise<string> {
  const run = await cli(['outbox', 'show', id, '--json'])
  expect(run.code, run.stderr).toBe(0)
  return (JSON.parse(run.stdout) as { state: string }).state
}

describe('a target module through the built binary', () => {
  it('interlock check makes it: the credential from ${VAR} named, the tier the module declares, no secret printed', async () => {
    const run = await cli(['check', '--only', 'targets', '--json'])
    const rows = (JSON.parse(run.stdout) as { checks: Row[] }).checks
    const row = (id: string) => rows.find((r) => r.id === id)
    expect(row('targets.jira.credentials')).toMatchObject({ status: 'pass', detail: 'auth set' })
    expect(row('targets.jira.tier')).toMatchObject({ status: 'warn', detail: 'tier 2, as the module declares; its probe did not say whether the service honours it' })
    expect(run.stdout).not.toContain(jira.apiToken)
  })

  it('outbox submit proposes, interlock relay sends through the module: one issue', async () => {
    const id = await submit('module-relay')
    const relay = startRelayProc('relay-1', ['--poll-ms', '20'], project.dir, env)
    try {
      await relayReady(relay)
      const done = await cli(['outbox', 'submit', '--target', 'jira', '--action', 'create_issue', '--thread', 'module-relay', '--args', JSON.stringify(jiraCall('module-relay').args), '--wait', '--json'])
      expect(done.code, done.stderr).toBe(0)
      expect(await state(id)).toBe('COMMITTED')
      expect(jira.issuesFor(id)).toHaveLength(1)
    } finally {
      relay.child.kill('SIGTERM')
      expect((await relay.exited).code, relay.stderr).toBe(0)
    }
  })

  it('a relay SIGKILLed after Jira made the issue: reconcile-effects asks the module\'s query and finds it, nothing sent twice', { timeout: 120_000 }, async () => {
    const id = await submit('module-reconcile')
    const relay = startRelayProc('relay-2', ['--poll-ms', '20', '--lease-ms', '500'], project.dir, { ...env, INTERLOCK_CRASH_AT: 'after-apply' })
    const exited = await relay.exited
    expect(exited.signal, relay.stderr).toBe('SIGKILL')
    expect(jira.issuesFor(id)).toHaveLength(1)
    expect(await state(id)).toBe('DISPATCHED')
    // The dead relay's lease (500 ms) keeps reconcile off the effect until it runs out: run again until it has.
    const deadline = Date.now() + 60_000
    let run = await cli(['reconcile-effects', '--older-than', '0s', '--json'])
    while (run.code === 0 && (await state(id)) === 'DISPATCHED' && Date.now() < deadline) run = await cli(['reconcile-effects', '--older-than', '0s', '--json'])
    expect(run.code, run.stderr + run.stdout).toBe(0)
    expect(await state(id), run.stdout + run.stderr).toBe('COMMITTED')
    expect(jira.issuesFor(id)).toHaveLength(1)
  })

  it('openInterlock() in a script of the project: the module made from interlock.toml, the effect committed', async () => {
    const script = project.write(
      'agent.mjs',
      `import { openInterlock } from 'agent-interlock'
const interlock = await openInterlock()
const outcome = await interlock.gate.submit(${JSON.stringify(jiraCall('module-library'))})
console.log(JSON.stringify(outcome))
await interlock.close()
`,
    )
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [script], { cwd: project.dir, env: { PATH: process.env.PATH ?? '', ...env } })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
      child.on('close', (code) => resolve({ code, stdout, stderr }))
    })
    expect(run.code, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'committed' })
    expect(jira.issuesFor(toEffect(jiraCall('module-library')).id)).toHaveLength(1)
  })

  it('mcp-proxy serves the tools the module declares: a call makes one issue, the same call again is answered from the journal', async () => {
    const proxy = await proxyClient({ cwd: project.dir, args: ['--target', 'jira'], env })
    try {
      const { tools } = await proxy.client.listTools()
      expect(tools).toEqual([expect.objectContaining({ name: 'create_issue', description: 'Open a Jira issue', inputSchema: expect.objectContaining({ required: ['project', 'summary'] }) })])
      const args = { project: 'OPS', summary: 'Refund stuck for mcp-1' }
      const first = await proxy.client.callTool({ name: 'create_issue', arguments: args })
      const id = (first._meta as Record<string, string>)['interlock/effect']!
      expect(first.isError, JSON.stringify(first)).toBeFalsy()
      expect(jira.issuesFor(id)).toHaveLength(1)
      const again = await proxy.client.callTool({ name: 'create_issue', arguments: args })
      expect(again._meta).toMatchObject({ 'interlock/effect': id, 'interlock/state': 'COMMITTED', 'interlock/replayed': true })
      expect(jira.issuesFor(id)).toHaveLength(1)
      // Not a tool of the module: a protocol error, nothing journaled.
      await expect(proxy.client.callTool({ name: 'delete_project', arguments: {} })).rejects.toThrow(/Tool delete_project not found/)
    } finally {
      await proxy.close()
    }
  })

  it('an mcp-proxy SIGKILLed after Jira made the issue: the next one recovers it at start with the module\'s query; the host\'s retry gets its answer, one issue', { timeout: 120_000 }, async () => {
    const args = { project: 'OPS', summary: 'Refund stuck for mcp-2' }
    const id = toEffect({ thread: 'mcp-crash', target: 'jira', action: 'create_issue', args, principal: osUserPrincipal().id }).id
    const dying = await proxyClient({ cwd: project.dir, args: ['--target', 'jira', '--thread', 'mcp-crash'], env: { ...env, INTERLOCK_CRASH_AT: 'after-apply' } })
    await expect(dying.client.callTool({ name: 'create_issue', arguments: args })).rejects.toThrow()
    await dying.exited
    expect(jira.issuesFor(id)).toHaveLength(1)
    expect(await state(id)).toBe('DISPATCHED')
    const next = await proxyClient({ cwd: project.dir, args: ['--target', 'jira', '--thread', 'mcp-crash'], env })
    try {
      const answer = await next.client.callTool({ name: 'create_issue', arguments: args, _meta: { 'interlock/retry': true } })
      expect(answer._meta, next.stderr()).toMatchObject({ 'interlock/effect': id, 'interlock/state': 'COMMITTED' })
      expect(next.stderr()).toContain(`mcp-proxy: recovered ${id.slice(0, 12)}`)
      expect(jira.issuesFor(id)).toHaveLength(1)
    } finally {
      await next.close()
    }
  })

  it('over HTTP, [targets.jira.proxy_http] says who may call the module\'s tools: no token 401, a token\'s calls made as its principal', async () => {
    project.write('http.toml', `[store]\npath = "journal-http.db"\n\n${jiraModuleToml(jira.url, 700)}\n[[targets.jira.proxy_http.tokens]]\nprincipal = "ci-bot"\ntoken = "\${CI_BOT_TOKEN}"\n`)
    const token = 'ci-bot-token-5f0e2d7a9b'
    const proxy = await proxyOverHttp({ cwd: project.dir, args: ['--config', 'http.toml', '--target', 'jira'], env: { ...env, CI_BOT_TOKEN: token } })
    try {
      expect((await rawRequest(proxy.url, { method: 'POST', body: INITIALIZE })).status).toBe(401)
      const client = await httpClient(proxy.url, { headers: { Authorization: `Bearer ${token}` } })
      try {
        const args = { project: 'OPS', summary: 'Refund stuck for http-1' }
        const answer = await client.callTool({ name: 'create_issue', arguments: args, _meta: { 'interlock/thread': 'ci-run-7' } })
        const id = (answer._meta as Record<string, string>)['interlock/effect']!
        expect(id).toBe(toEffect({ thread: 'ci-run-7', target: 'jira', action: 'create_issue', args, principal: 'token:ci-bot' }).id)
        expect(jira.issuesFor(id)).toHaveLength(1)
      } finally {
        await client.close()
      }
    } finally {
      await proxy.close()
    }
  })

  it('a module that throws while loading stops check, submit, relay, reconcile-effects and mcp-proxy with exit 3, naming it', async () => {
    const broken = moduleProject({ 'targets/jira.js': 'throw new Error("no network in this module")\n' })
    try {
      writeKeyFile(join(broken.dir, 'relay.key'), generateKeyPair('relay', 'relay-3'))
      broken.write('interlock.toml', `[store]\npath = "journal.db"\n\n[relay]\nkey = "relay.key"\n\n${jiraModuleToml(jira.url)}`)
      const call = jiraCall('broken')
      for (const args of [
        ['check'],
        ['outbox', 'submit', '--target', 'jira', '--action', call.action, '--args', JSON.stringify(call.args)],
        ['relay'],
        ['reconcile-effects'],
        ['mcp-proxy', '--target', 'jira'],
      ]) {
        const run = await interlock(args, { cwd: broken.dir, env })
        expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(3)
        expect(run.stderr + run.stdout).toContain('targets.jira.module: ./targets/jira.js threw while loading: Error: no network in this module')
        expect(run.stderr).not.toMatch(/\n\s+at .*node_modules/)
      }
    } finally {
      broken.cleanup()
    }
  })
})
