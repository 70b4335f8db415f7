/**
 * Secrets never reach the journal, nor anything printed, exported or logged:
 * the built binary as an operator runs it, on SQLite and on PostgreSQL.
 *
 * Three webhook targets whose URL path and query carry `${HOOK_TOKEN}` and
 * whose Authorization header carries `${API_TOKEN}` (each with `"`, `\` and
 * URL-special characters), against a service that says them back: in a
 * premise read, in the answer to the effect (COMMITTED), in an Express-style
 * 404 page quoting the URL (FAILED), in a 500 quoting it (AMBIGUOUS). An
 * agent proposes through the outbox, `interlock relay` and
 * `interlock reconcile-effects` carry the effects on; then every row of every
 * table, `outbox export`, `outbox show` / `list` and every line the commands
 * printed are searched for the secrets in every spelling.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import type { InterlockConfig, StoreConfig } from '../../src/core/config/types.js'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import type { EffectInput } from '../../src/core/effect.js'
import type { State } from '../../src/core/lifecycle.js'
import { Outbox } from '../../src/core/outbox/outbox.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { assertCliBuilt, interlock, type Run } from '../helpers/cli.js'
import { startEchoService, type EchoService } from '../helpers/echo-service.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'
import { relayReady, startRelayProc } from '../helpers/relay-procs.js'
import { dumpStore, expectNoLeak, SECRET_ENV, secretHookToml } from '../helpers/secret-leaks.js'

let echo: EchoService
let db: TestDatabase
beforeAll(async () => {
  assertCliBuilt()
  echo = await startEchoService()
  db = await createTestDatabase()
})
afterAll(async () => {
  await echo?.close()
  await db?.drop()
})

const SETTLED: readonly State[] = ['COMMITTED', 'FAILED', 'AMBIGUOUS', 'REJECTED', 'HELD']
const REDACTION = /\*\*\*|\[redacted\]/

function configText(store: StoreConfig): string {
  const storeToml = store.kind === 'sqlite' ? `path = "journal.db"` : `kind = "postgres"\nurl = "${store.url}"\nschema = "${store.schema}"`
  return `[store]
${storeToml}

[gate]
max_attempts = 2
backoff_ms = 10

[relay]
key = "relay.key"

${secretHookToml('hook_ok', echo.url, '/anything')}
${secretHookToml('hook_refused', echo.url, '')}
${secretHookToml('hook_down', echo.url, '/fail/500')}`
}

interface Deployment {
  cwd: string
  file: string
  config: InterlockConfig
  store: Store
  outbox: Outbox
  targets: ReturnType<typeof createTargets>
}

/** The operator's files, and the agent's side in this process, built as main's agents build it. */
async function deploy(storeConfig: StoreConfig): Promise<Deployment> {
  const cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-secrets-'))
  writeKeyFile(join(cwd, 'relay.key'), generateKeyPair('relay', 'relay-1'))
  const file = join(cwd, 'interlock.toml')
  const text = configText(storeConfig.kind === 'sqlite' ? { kind: 'sqlite', path: join(cwd, 'journal.db') } : storeConfig)
  writeFileSync(file, text)
  const config = parseConfig(text, { file, env: SECRET_ENV })
  await install(config.store)
  const store = await openStore(config.store)
  const targets = createTargets(config.targets, { secrets: config.secrets })
  return { cwd, file, config, store, targets, outbox: new Outbox({ store, targets: targets.values() }) }
}

/** One effect per target, each resting on what the agent read through the premise URL they share. */
async function propose(d: Deployment, thread: string): Promise<Record<'ok' | 'refused' | 'down', string>> {
  const args = { text: `deploy finished (${thread})` }
  const premises = await d.targets.get('hook_ok')!.capture!('post', args)
  const submit = async (target: string) => (await d.outbox.submit({ thread, target, action: 'post', args, premises } satisfies EffectInput)).effectId
  return { ok: await submit('hook_ok'), refused: await submit('hook_refused'), down: await submit('hook_down') }
}

async function settle(store: Store, ids: string[], ms = 30_000): Promise<void> {
  const end = Date.now() + ms
  for (;;) {
    const states = await Promise.all(ids.map(async (id) => (await store.get(id))?.state))
    if (states.every((s) => s !== undefined && SETTLED.includes(s))) return
    if (Date.now() > end) throw new Error(`effects did not settle: ${states.join(', ')}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function expectStates(store: Store, ids: Record<'ok' | 'refused' | 'down', string>): Promise<void> {
  const state = async (id: string) => (await store.get(id))?.state
  // Premises captured by the agent, read again by the relay or reconcile: equal, so none is REJECTED.
  expect({ ok: await state(ids.ok), refused: await state(ids.refused), down: await state(ids.down) }).toEqual({
    ok: 'COMMITTED',
    refused: 'FAILED',
    down: 'AMBIGUOUS',
  })
}

const stores: [string, () => StoreConfig][] = [
  ['SQLite', () => ({ kind: 'sqlite', path: 'journal.db' })],
  ['PostgreSQL', () => ({ kind: 'postgres', url: db.url, schema: `secrets_${Date.now().toString(36)}` })],
]

describe.each(stores)('secrets from the environment, on %s', (_name, storeConfig) => {
  // A relay and a dozen runs of the binary: longer than the default test timeout on a busy machine.
  it('reach no journal record, effects row, export, log line or printed output of relay, reconcile-effects and outbox', { timeout: 240_000 }, async () => {
    const d = await deploy(storeConfig())
    const env = { ...SECRET_ENV }
    const printed: [string, Run | { stdout: string; stderr: string }][] = []
    try {
      // The relay carries the first three on.
      const viaRelay = await propose(d, 'relayed')
      const relay = startRelayProc('relay-1', ['--config', d.file, '--poll-ms', '20'], d.cwd, env)
      await relayReady(relay)
      await settle(d.store, Object.values(viaRelay))
      relay.child.kill('SIGTERM')
      expect((await relay.exited).code, relay.stderr).toBe(0)
      printed.push(['relay', relay])
      await expectStates(d.store, viaRelay)

      // reconcile-effects carries the next three on, printing a table; then three more, printing JSON.
      const viaReconcile = await propose(d, 'reconciled')
      const human = await interlock(['reconcile-effects', '--older-than', '1ms'], { cwd: d.cwd, env })
      expect(human.code, human.stderr + human.stdout).toBe(10)
      printed.push(['reconcile-effects', human])
      await expectStates(d.store, viaReconcile)
      const viaReconcileJson = await propose(d, 'reconciled-json')
      const json = await interlock(['reconcile-effects', '--older-than', '1ms', '--json'], { cwd: d.cwd, env })
      expect(json.code, json.stderr + json.stdout).toBe(10)
      printed.push(['reconcile-effects --json', json])
      await expectStates(d.store, viaReconcileJson)

      const all = [...Object.values(viaRelay), ...Object.values(viaReconcile), ...Object.values(viaReconcileJson)]
      // One effect of each state, written by the relay and by reconcile-effects.
      for (const id of [viaRelay.ok, viaRelay.refused, viaReconcile.down, viaReconcileJson.ok]) {
        printed.push([`outbox show ${id}`, await interlock(['outbox', 'show', id], { cwd: d.cwd, env })])
        printed.push([`outbox show ${id} --json`, await interlock(['outbox', 'show', id, '--json'], { cwd: d.cwd, env })])
      }
      printed.push(['outbox list', await interlock(['outbox', 'list'], { cwd: d.cwd, env })])
      printed.push(['outbox list --json', await interlock(['outbox', 'list', '--json'], { cwd: d.cwd, env })])
      const exported = join(d.cwd, 'export.jsonl')
      const exportRun = await interlock(['outbox', 'export', '--out', exported], { cwd: d.cwd, env })
      expect(exportRun.code, exportRun.stderr).toBe(0)
      printed.push(['outbox export', exportRun])

      // Not vacuous: the service did say the secrets back, and what came back was scrubbed.
      const records = (await Promise.all(all.map((id) => d.store.history(id)))).flat()
      expect(records.some((r) => r.state === 'REJECTED')).toBe(false)
      const failed = records.filter((r) => r.state === 'FAILED').map((r) => String(r.data.reason))
      expect(failed).toHaveLength(3)
      for (const reason of failed) expect(reason).toMatch(/refused \(404\): .*Cannot POST \/hooks\//)
      for (const reason of failed) expect(reason).toMatch(REDACTION)
      const ambiguous = records.filter((r) => r.state === 'AMBIGUOUS').map((r) => String(r.data.reason))
      for (const reason of ambiguous) expect(reason).toMatch(/answered 500.*500 for POST \/fail\/500\/hooks\/.*\?sig=/)
      for (const reason of ambiguous) expect(reason).toMatch(REDACTION)
      const committed = records.filter((r) => r.state === 'COMMITTED')
      expect(committed).toHaveLength(3)
      for (const r of committed) expect(JSON.stringify(r.data.receipt)).toMatch(REDACTION)
      const proposed = records.filter((r) => r.state === 'PROPOSED')
      for (const r of proposed) expect(JSON.stringify(r.data.effect)).toMatch(REDACTION)

      expectNoLeak('the journal, as the store reads it', JSON.stringify(records))
      expectNoLeak('the rows of every table', await dumpStore(d.config.store))
      expectNoLeak('outbox export', readFileSync(exported, 'utf8'))
      for (const [what, run] of printed) expectNoLeak(`${what}: stdout`, run.stdout)
      for (const [what, run] of printed) expectNoLeak(`${what}: stderr`, run.stderr)
    } finally {
      await d.outbox.close()
      for (const t of d.targets.values()) await t.close?.()
      await d.store.close()
    }
  })
})

describe('a malformed ${VAR} reference', () => {
  it('is a config error naming the key: install does not run', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-secrets-'))
    writeFileSync(
      join(cwd, 'interlock.toml'),
      `[store]\npath = "journal.db"\n\n[targets.h4]\ntype = "http"\ntier = 3\nurl = "http://127.0.0.1:9/hook"\nheaders = { Authorization = "Bearer \${H4_TOKEN" }\n`,
    )
    const run = await interlock(['install'], { cwd, env: { H4_TOKEN: 'tok_never_used' } })
    expect(run.code, run.stdout + run.stderr).toBe(3)
    expect(run.stderr).toContain('targets.h4.headers.Authorization')
    expect(run.stderr).toMatch(/no closing brace/)
    expect(readdirSync(cwd)).not.toContain('journal.db')
  })
})
