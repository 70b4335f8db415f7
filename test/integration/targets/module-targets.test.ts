/**
 * `type = "module"`: a user's own target code, loaded from interlock.toml
 * like any built-in type. The module is the one README.md shows (Jira's
 * create issue, tier 2 by a label search), in a project of its own whose
 * `agent-interlock` is the built package: another copy than the gate's, so
 * the DispatchFaults it throws must still be read for what they say.
 * Every way a module can be wrong is a ConfigError (exit 3) naming the key
 * path and the module, scrubbed of the file's secrets.
 */
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../../src/core/config/load.js'
import { toEffect } from '../../../src/core/effect.js'
import { ConfigError, ExitCode } from '../../../src/core/errors.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import { crashPoints, registerContract, tierContract, type TargetUnderTest } from '../../../src/testing/index.js'
import { JiraEmulator } from '../../emulators/jira.js'
import { jiraCall } from '../../helpers/declared-apis.js'
import { JIRA_MODULE, jiraModuleToml, moduleProject, type ModuleProject } from '../../helpers/module-project.js'
import { sqliteGate } from '../../helpers/sqlite-gate.js'

const LAG_MS = 300
const SECRET = 'Basic c2VjcmV0LW1vZHVsZS10b2tlbi05OTE='

let jira: JiraEmulator
let project: ModuleProject
beforeAll(async () => {
  jira = await new JiraEmulator().start()
  jira.searchLagMs = LAG_MS
  project = moduleProject({ 'targets/jira.js': JIRA_MODULE })
})
afterAll(async () => {
  await jira.close()
  project.cleanup()
})
afterEach(() => jira.clearFaults())

function configWith(toml: string, env: Record<string, string> = { JIRA_BASIC_AUTH: jira.basicAuth }) {
  const file = project.write('interlock.toml', toml)
  return loadConfig({ path: file, env })
}

/** The ConfigError a config (or making its targets) ends in. */
function refusal(toml: string, env?: Record<string, string>): ConfigError {
  try {
    createTargets(configWith(toml, env).targets)
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError)
    return e as ConfigError
  }
  throw new Error('expected a ConfigError')
}

describe('a target module from interlock.toml', () => {
  it('drives the service through a gate: one issue, its key as receipt', async () => {
    const config = configWith(jiraModuleToml(jira.url))
    const g = await sqliteGate(() => [...createTargets(config.targets).values()], { realSleep: true })
    try {
      const call = jiraCall('module-1')
      const outcome = await g.gate.submit(call)
      const issues = jira.issuesFor(toEffect(call).id)
      expect(issues).toHaveLength(1)
      expect(outcome).toMatchObject({ status: 'committed', receipt: { key: issues[0]!.key } })
    } finally {
      await g.cleanup()
    }
  })

  it('a DispatchFault from the module\'s own copy of agent-interlock is read by its kind: a 400 is FAILED, not an unknown outcome', async () => {
    const config = configWith(jiraModuleToml(jira.url))
    const g = await sqliteGate(() => [...createTargets(config.targets).values()], { realSleep: true })
    try {
      const call = { ...jiraCall('module-refused'), args: { project: 'NOPE', summary: 'unknown project' } }
      const outcome = await g.gate.submit(call)
      expect(outcome.status).toBe('failed')
      expect(jira.issuesFor(toEffect(call).id)).toHaveLength(0)
    } finally {
      await g.cleanup()
    }
  })

  it('tier 2: an answer lost after Jira made the issue is found by the module\'s query once the search has caught up: one issue', async () => {
    const config = configWith(jiraModuleToml(jira.url, 700))
    const g = await sqliteGate(() => [...createTargets(config.targets).values()], { realSleep: true, retry: { maxAttempts: 8, backoffMs: 100 } })
    try {
      const call = jiraCall('module-2')
      jira.fault({ mode: 'apply-then-drop' })
      const outcome = await g.gate.submit(call)
      expect(outcome.status).toBe('committed')
      expect(jira.issuesFor(toEffect(call).id)).toHaveLength(1)
    } finally {
      await g.cleanup()
    }
  })
})

// The kit a module's author runs on it (agent-interlock/testing): a module is one more table.
describe('the contract kit on the module: its tier contract and crash points', () => {
  const module: TargetUnderTest<JiraEmulator> = {
    name: 'jira',
    service: {
      start: async () => {
        const j = await new JiraEmulator().start()
        j.searchLagMs = LAG_MS
        return j
      },
      stop: (j) => j.close(),
    },
    table: (j) => ({ type: 'module', module: join(project.dir, 'targets/jira.js'), base_url: j.url, auth: '${JIRA_BASIC_AUTH}', settle_ms: 700 }),
    env: (j) => ({ JIRA_BASIC_AUTH: j.basicAuth }),
    gate: { max_attempts: 8, backoff_ms: 100 },
    call: (thread) => jiraCall(thread),
    applications: (effect, j) => j.issuesFor(effect.id).length,
  }
  registerContract([...tierContract(module), ...crashPoints(module)], { it })
})

describe('a module that cannot be used is a config error (exit 3) naming it', () => {
  const table = (module: string, extra = '') => `[targets.crm]\ntype = "module"\nmodule = "${module}"\ntoken = "\${CRM_TOKEN}"\n${extra}`
  const env = { CRM_TOKEN: SECRET }

  it('not found: the key path and where it was looked for', () => {
    const e = refusal(table('./targets/missing.js'), env)
    expect(e.exitCode).toBe(ExitCode.CONFIG)
    expect(e.problems).toEqual([`targets.crm.module: ./targets/missing.js not found (looked for ${project.dir}/targets/missing.js)`])
  })

  it('throws while loading: its message and the line, the secret scrubbed', () => {
    project.write('targets/throws.js', `throw new Error('cannot reach ' + ${JSON.stringify(SECRET)})\nexport default {}\n`)
    const e = refusal(table('./targets/throws.js'), env)
    expect(e.problems[0]).toMatch(/^targets\.crm\.module: \.\/targets\/throws\.js threw while loading: Error: cannot reach \*\*\* \(at .*throws\.js:1/)
    expect(JSON.stringify(e.problems)).not.toContain(SECRET)
  })

  it('top-level await: refused with the reason', () => {
    project.write('targets/tla.js', 'await Promise.resolve()\nexport default {}\n')
    expect(refusal(table('./targets/tla.js'), env).problems[0]).toContain('uses top-level await')
  })

  it('exports no definition', () => {
    project.write('targets/empty.js', 'export const x = 1\n')
    expect(refusal(table('./targets/empty.js'), env).problems[0]).toBe('targets.crm.module: ./targets/empty.js does not export a target definition: expected an object with create(settings, ctx), got nothing')
  })

  it('its settings break its own schema: each problem at its key path, a typo named', () => {
    project.write(
      'targets/strict.js',
      `export default { settings: { type: 'object', required: ['base_url'], additionalProperties: false, properties: { base_url: { type: 'string', format: 'uri' }, token: { type: 'string' }, retries: { type: 'integer' } } }, create: () => ({}) }\n`,
    )
    const e = refusal(table('./targets/strict.js', 'retires = 3\n'), env)
    expect(e.problems).toEqual(expect.arrayContaining(['targets.crm.base_url: required key is missing', 'targets.crm.retires: unknown key (did you mean "retries"?)']))
    expect(refusal(table('./targets/strict.js', 'base_url = "not a url"\n'), env).problems).toEqual(['targets.crm.base_url: must match format "uri"'])
  })

  it('create() throws, returns a promise, a wrong name, or no valid target: each said, the secret scrubbed', () => {
    const cases: Array<[string, RegExp]> = [
      [`create: (s) => { throw new Error('bad token ' + s.token) }`, /create\(\) threw: bad token \*\*\*/],
      [`create: async (s, ctx) => ({ name: ctx.name })`, /create\(\) returned a promise/],
      [`create: () => ({ name: 'other', tier: 1, apply() {}, validatePremises() {} })`, /returned a target named "other"; it must carry its name in interlock.toml, "crm"/],
      [`create: (s, ctx) => ({ name: ctx.name, tier: 2, apply() {}, validatePremises() {} })`, /returned no valid target: target crm: a tier-2 target must implement query\(\)/],
      [`create: () => 42`, /create\(\) returned a number, not a target/],
    ]
    for (const [i, [create, expected]] of cases.entries()) {
      project.write(`targets/bad-${i}.js`, `export default { ${create} }\n`)
      const e = refusal(table(`./targets/bad-${i}.js`), env)
      expect(e.problems.join('\n')).toMatch(expected)
      expect(e.message).toContain('target crm: its module cannot be used')
      expect(JSON.stringify(e)).not.toContain(SECRET)
    }
  })

  it('commands that only read the store do not load it: a broken module does not stop them', () => {
    project.write('targets/throws-too.js', 'throw new Error("broken")\n')
    const file = project.write('interlock.toml', table('./targets/throws-too.js'))
    const config = loadConfig({ path: file, env, deferTargetVariables: true })
    expect(config.targets.crm).toMatchObject({ type: 'module', module: './targets/throws-too.js', settings: { token: SECRET } })
    // ...and making the target still refuses it, the same way.
    expect(() => createTargets(config.targets)).toThrow(/threw while loading: Error: broken/)
  })

  it('a CommonJS module and a package name resolve too', () => {
    project.write('node_modules/crm-target/package.json', JSON.stringify({ name: 'crm-target', main: 'index.cjs' }))
    project.write('node_modules/crm-target/index.cjs', `module.exports = { create: (s, ctx) => ({ name: ctx.name, tier: 3, apply: async () => ({}), validatePremises: async () => [] }) }\n`)
    const targets = createTargets(configWith(table('crm-target'), env).targets)
    expect(targets.get('crm')!.tier).toBe(3)
  })
})
