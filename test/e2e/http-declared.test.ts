/**
 * An API declared only in interlock.toml, as the built binary sees it:
 * `interlock check` prints, per action, the request a sample call would
 * send (the service's own shape, secrets masked), a template mistake is a
 * config failure naming its key path (exit 3), and `interlock outbox submit`
 * refuses a call that lacks an argument a template needs, naming it (exit 2).
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TwilioEmulator } from '../emulators/twilio.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { linearToml, twilioToml } from '../helpers/declared-apis.js'

interface Row {
  id: string
  status: 'pass' | 'warn' | 'fail'
  detail: string
  fix?: string
}

const twilio = new TwilioEmulator()

beforeAll(async () => {
  assertCliBuilt()
  await twilio.start()
})
afterAll(() => twilio.close())

function project(extra = ''): { cwd: string; env: Record<string, string> } {
  const cwd = mkdtempSync(join(tmpdir(), 'interlock-declared-'))
  const declared = twilioToml(twilio.url, twilio)
  const linear = linearToml('http://127.0.0.1:9')
  writeFileSync(
    join(cwd, 'interlock.toml'),
    `[store]\npath = "journal.db"\n\n${declared.toml}\n${linear.toml}
[targets.hooks]
type = "http"
tier = 3
url = "${twilio.url}/hooks/{action}"
headers = { "X-Api-Key" = "\${HOOK_KEY}" }
${extra}`,
  )
  return { cwd, env: { ...declared.env, ...linear.env, HOOK_KEY: 'hook_key_do_not_print_7c1d' } }
}

describe('interlock check on a declared API', () => {
  it('prints, per action, the request a sample call would send, with every secret masked', async () => {
    const { cwd, env } = project()
    const run = await interlock(['check', '--only', 'targets', '--json'], { cwd, env })
    const report = JSON.parse(run.stdout) as { checks: Row[] }
    const row = (id: string) => report.checks.find((c) => c.id === id)
    const sms = row('targets.sms.actions.send_sms.request')
    expect(sms?.status).toBe('pass')
    expect(sms?.detail).toContain(`POST ${twilio.url}/2010-04-01/Accounts/***/Messages.json; headers: content-type: application/x-www-form-urlencoded, Authorization: ***, i-twilio-idempotency-token: 5a3b1e`)
    expect(sms?.detail).toContain('; body: To=sample-to&From=***&Body=sample-body (tier 1, args {"to":"sample-to","body":"sample-body"}')
    expect(row('targets.sms.tier')?.detail).toBe('tier 1 is declared: the service must deduplicate by the I-Twilio-Idempotency-Token header, which no read-only probe can see')
    // A GraphQL mutation: the document as written, values in its variables, the marker the search looks for.
    const issue = row('targets.linear.actions.create_issue.request')
    expect(issue?.detail).toContain('POST http://127.0.0.1:9/graphql; headers: content-type: application/json, Authorization: ***; body: {"query":"mutation CreateIssue($input: IssueCreateInput!) {')
    expect(issue?.detail).toContain('"variables":{"input":{"description":"sample-description\\n\\ninterlock-effect 5a3b1e')
    expect(issue?.detail).toContain('asked by POST http://127.0.0.1:9/graphql (found: /data/issues/nodes/0/id)')
    // The envelope, for a target that declares no template: what it has always sent.
    const hooks = row('targets.hooks.request')
    expect(hooks?.detail).toContain(`POST ${twilio.url}/hooks/sample_action; headers: content-type: application/json, X-Api-Key: ***; body: {"action":"sample_action","args":{},"effect_id":"5a3b1e`)
    for (const secret of [env.LINEAR_API_KEY!, twilio.authToken, env.TWILIO_BASIC_AUTH!.slice('Basic '.length), twilio.accountSid, env.HOOK_KEY!, env.TWILIO_FROM!]) {
      expect(run.stdout).not.toContain(secret)
    }
    // Nothing was sent to create anything: the sample is built from the config alone.
    expect(twilio.messages).toEqual([])

    const human = await interlock(['check', '--only', 'targets'], { cwd, env })
    expect(human.stdout).toContain('targets.sms.actions.send_sms.request')
    expect(human.stdout).not.toContain(twilio.authToken)
  })

  it('a template mistake fails the config with its key path, exit 3', async () => {
    const { cwd, env } = project('[targets.hooks.actions.ping]\nbody = \'{"id": {args.id}}\'\n')
    const run = await interlock(['check', '--json'], { cwd, env })
    expect(run.code).toBe(3)
    expect(run.stdout).toContain('targets.hooks.actions.ping.body: not valid JSON')
  })
})

describe('interlock outbox submit', () => {
  it('refuses a call that lacks an argument a template needs, naming it; nothing is journaled', async () => {
    const { cwd, env } = project()
    const run = await interlock(['outbox', 'submit', '--target', 'sms', '--action', 'send_sms', '--arg', 'to=+15558675310'], { cwd, env })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('args.body')
    const listed = await interlock(['outbox', 'list', '--json'], { cwd, env })
    expect(listed.stdout).not.toContain('send_sms')
  })
})
