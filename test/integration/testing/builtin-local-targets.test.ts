/**
 * agent-interlock/testing against the built-in targets that talk to local
 * things, as a user would run it against their own: each declared as a
 * [targets.<name>] table, against the real thing, through the tier contract
 * and the crash points, judged by that thing's own record:
 * - repo (tier 2): a real temporary git repository; applications are the
 *   branch's commits carrying the effect's `Interlock-Effect:` trailer;
 * - postgres_row (tier 2): a table of its own on the real PostgreSQL,
 *   effect_id unique as the target requires, so its rows can count one at most;
 * - http without a template (Interlock's envelope), tier 1 at the service's
 *   /idempotent (applications per Idempotency-Key) and tier 2 at its /plain
 *   with /applied/{effect_id} as the query (applications per effect id);
 * - webhook (tier 1): the receiver of src/emulators/webhook.ts, which verifies
 *   each signature and acts once per Idempotency-Key;
 * - mcp: server-memory from npm, add_observations declared tier 2 (the
 *   effect id marked in the observation, search_nodes as the query). The
 *   server folds an observation it already has into the one it keeps, so
 *   its file cannot show a call made twice: applications are the calls that
 *   reached it (the wire in front of it, mcp-pipe.mjs), checked against its
 *   file, which must hold the mark exactly when one did.
 * The vendor APIs' targets (stripe, github, s3, sendgrid, slack) are in
 * builtin-targets.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'vitest'
import { crashPoints, registerContract, tierContract, type TargetUnderTest } from '../../../src/testing/index.js'
import { startHttpService, type HttpService } from '../../helpers/http-service.js'
import { tempRepo, type TempRepo } from '../../helpers/git-repo.js'
import { memoryLedger, PIPE, SERVERS, wireLog } from '../../helpers/mcp.js'
import { useTestDatabase } from '../../helpers/pg.js'
import { WebhookReceiver } from '../../emulators/webhook.js'

const repo: TargetUnderTest<TempRepo> = {
  name: 'notes',
  service: { start: () => tempRepo({ 'README.md': 'Notes the agent keeps.\n' }), stop: (r) => r.cleanup() },
  table: (r) => ({ type: 'repo', path: r.path, branch: 'main' }),
  // A file of its own per effect, absent when decided: the premise is that it does not exist yet.
  call: (thread) => ({ thread, target: 'notes', action: 'write_file', args: { path: `notes/${thread}.md`, content: `Decided in ${thread}.\n` } }),
  applications: async (effect, r) => {
    const trailers = await r.git('log', 'main', '--format=%(trailers:key=Interlock-Effect,valueonly)')
    return trailers.split('\n').filter((line) => line.trim() === effect.id).length
  },
  changeWorld: (effect, r) => r.write(String(effect.args.path), 'A person wrote this first.\n'),
}

const pg = useTestDatabase()
interface Payouts {
  url: string
  count(effectId: string): Promise<number>
}
const postgresRow: TargetUnderTest<Payouts> = {
  name: 'payouts',
  service: {
    start: async () => {
      await pg.admin.query(`
        CREATE TABLE IF NOT EXISTS kit_accounts (id text PRIMARY KEY, status text NOT NULL);
        CREATE TABLE IF NOT EXISTS kit_payouts (effect_id text NOT NULL UNIQUE, account_id text NOT NULL, amount numeric(12,2) NOT NULL);
        INSERT INTO kit_accounts VALUES ('acc-kit', 'open') ON CONFLICT (id) DO UPDATE SET status = 'open';
      `)
      return {
        url: pg.db.url,
        count: async (id) => (await pg.admin.query('SELECT count(*)::int AS n FROM kit_payouts WHERE effect_id = $1', [id])).rows[0].n as number,
      }
    },
  },
  table: {
    type: 'postgres_row',
    url: '${KIT_DATABASE_URL}',
    table: 'kit_payouts',
    columns: { account_id: 'account_id', amount: 'amount' },
    premise_sql: 'SELECT status FROM kit_accounts WHERE id = $1',
    premise_params: ['account_id'],
    statement_timeout_ms: 3000,
    timeout_ms: 6000,
  },
  env: (s) => ({ KIT_DATABASE_URL: s.url }),
  call: (thread) => ({ thread, target: 'payouts', action: 'insert', args: { account_id: 'acc-kit', amount: '12.50' } }),
  applications: (effect, s) => s.count(effect.id),
  changeWorld: async () => void (await pg.admin.query(`UPDATE kit_accounts SET status = 'closed' WHERE id = 'acc-kit'`)),
}

/** The service with an account to premise on. */
const httpService = {
  start: async () => {
    const s = await startHttpService()
    s.setResource('acc-kit', { status: 'open', balance: '100.00' })
    return s
  },
  stop: (s: HttpService) => s.close(),
}
const httpCall = (target: string) => (thread: string) => ({ thread, target, action: 'refund', args: { account: 'acc-kit', amount: '12.50', order: thread } })
const accountClosed = (_effect: unknown, s: HttpService) => s.setResource('acc-kit', { status: 'closed', balance: '100.00' })

const httpTier1: TargetUnderTest<HttpService> = {
  name: 'refunds',
  service: httpService,
  table: (s) => ({ type: 'http', tier: 1, url: `${s.url}/idempotent`, premise_url: `${s.url}/resources/{args.account}`, timeout_ms: 3000 }),
  call: httpCall('refunds'),
  applications: (effect, s) => s.counts().idempotent[effect.id] ?? 0,
  changeWorld: accountClosed,
}

const httpTier2: TargetUnderTest<HttpService> = {
  name: 'ledger',
  service: httpService,
  table: (s) => ({
    type: 'http',
    tier: 2,
    url: `${s.url}/plain`,
    query_url: `${s.url}/applied/{effect_id}`,
    premise_url: `${s.url}/resources/{args.account}`,
    timeout_ms: 3000,
  }),
  call: httpCall('ledger'),
  applications: (effect, s) => s.counts().plain[effect.id] ?? 0,
  changeWorld: accountClosed,
}

const HOOK_SECRET = 'whsec_kit_receiver_secret_that_must_never_leak'
const webhook: TargetUnderTest<WebhookReceiver> = {
  name: 'hooks',
  service: { start: () => new WebhookReceiver(HOOK_SECRET).start(), stop: (r) => r.close() },
  table: (r) => ({ type: 'webhook', url: `${r.url}/hooks/orders`, secret: '${HOOK_SECRET}', timeout_ms: 3000 }),
  env: { HOOK_SECRET },
  call: (thread) => ({ thread, target: 'hooks', action: 'order_shipped', args: { order: thread, carrier: 'post' } }),
  applications: (effect, r) => {
    if (r.badSignatures > 0) throw new Error(`the receiver refused ${r.badSignatures} deliveries whose Interlock-Signature did not verify`)
    return r.count(effect.id)
  },
}

interface Memory {
  dir: string
  file: string
  wire: string
}
const alice = { type: 'entity', name: 'alice', entityType: 'person', observations: ['likes tea'] }
const mcp: TargetUnderTest<Memory> = {
  name: 'memory',
  service: {
    start: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'interlock-kit-memory-'))
      const file = join(dir, 'memory.jsonl')
      writeFileSync(file, `${JSON.stringify(alice)}\n`)
      return { dir, file, wire: join(dir, 'wire.log') }
    },
    stop: (m) => rmSync(m.dir, { recursive: true, force: true }),
  },
  table: (m) => ({
    type: 'mcp',
    command: process.execPath,
    args: [PIPE, process.execPath, SERVERS.memory],
    env: { MEMORY_FILE_PATH: m.file, PIPE_LOG: m.wire },
    timeout_ms: 10_000,
    tools: {
      add_observations: {
        tier: 2,
        mark: { path: 'observations.0.contents', value: 'interlock-effect {effect_id}' },
        query: { tool: 'search_nodes', args: { query: 'interlock-effect {effect_id}' }, found: 'interlock-effect {effect_id}' },
        rests_on: [{ tool: 'open_nodes', args: { names: ['{args.observations.0.entityName}'] } }],
      },
    },
  }),
  call: (thread) => ({ thread, target: 'memory', action: 'add_observations', args: { observations: [{ entityName: 'alice', contents: [`moved, says ${thread}`] }] } }),
  applications: (effect, m) => {
    const calls = wireLog(m.wire).filter((c) => c.tool === 'add_observations' && c.effect === effect.id).length
    const marked = (memoryLedger(m.file).find((e) => e.name === 'alice')?.observations ?? []).includes(`interlock-effect ${effect.id}`)
    if (marked !== calls > 0) throw new Error(`server-memory's file ${marked ? 'holds' : 'lacks'} the mark of effect ${effect.id.slice(0, 12)}, yet ${calls} calls of it reached the server`)
    return calls
  },
  changeWorld: (_effect, m) => {
    const rest = readFileSync(m.file, 'utf8').split('\n').filter((l) => l && JSON.parse(l).name !== 'alice')
    writeFileSync(m.file, [JSON.stringify({ ...alice, observations: [...alice.observations, 'moved to Lyon'] }), ...rest, ''].join('\n'))
  },
}

describe.each([
  ['repo (tier 2)', repo],
  ['postgres_row (tier 2)', postgresRow],
  ['http, the envelope (tier 1)', httpTier1],
  ['http, the envelope (tier 2)', httpTier2],
  ['webhook (tier 1)', webhook],
  ['mcp, server-memory (a tool declared tier 2)', mcp],
] as [string, TargetUnderTest<unknown>][])('%s', (_name, target) => {
  registerContract([...tierContract(target), ...crashPoints(target)], { it })
})
