/**
 * The database roles of a shared PostgreSQL store, set up as a DBA would from
 * what `interlock install --print-grants` prints, on real login roles of the
 * test server, each party then doing its work as that role:
 * - the agent role can only propose and read its own effects: every other
 *   write, and every read of another role's effects, is refused by
 *   PostgreSQL itself, whatever client it uses;
 * - the relay, operator and read-only roles do their jobs with exactly their
 *   grants, and are refused what is not their job.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import type { PostgresStoreConfig } from '../../src/core/config/types.js'
import { generateKeyPair, writeKeyFile, type KeyPair } from '../../src/core/crypto/keys.js'
import { toEffect, type Effect, type EffectInput, type Tier } from '../../src/core/effect.js'
import { StoreError } from '../../src/core/errors.js'
import { proposal } from '../../src/core/gate-context.js'
import { Outbox } from '../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { Relay } from '../../src/core/relay/relay.js'
import { latestVersion } from '../../src/core/stores/migrations.js'
import { openStore } from '../../src/core/stores/open.js'
import { leaseStatements } from '../../src/core/stores/postgres/leases.js'
import { GENESIS_HASH, type AppendRequest, type Store } from '../../src/core/stores/store.js'
import { assertCliBuilt, interlock, type Run } from '../helpers/cli.js'
import { CountingTarget } from '../helpers/counting-target.js'
import { createTestDatabase, testServerUrl, type TestDatabase } from '../helpers/pg.js'

beforeAll(assertCliBuilt)

const SCHEMA = 'ops'
const PASSWORD = 'role-test-password'
// Roles belong to the whole server: a name of this file's own.
const tag = randomBytes(4).toString('hex')
const ROLE = {
  installer: `il_${tag}_installer`,
  agent: `il_${tag}_agent`,
  otherAgent: `il_${tag}_agent_b`,
  relay: `il_${tag}_relay`,
  operator: `il_${tag}_operator`,
  auditor: `il_${tag}_auditor`,
  pruner: `il_${tag}_pruner`,
}
type Job = keyof typeof ROLE

let db: TestDatabase
let admin: pg.Client
let cwd: string
let alice: KeyPair
let relayKey: KeyPair
const clients: pg.Client[] = []
const stores: Store[] = []

const json = (run: Run) => JSON.parse(run.stdout)

function urlAs(job: Job): string {
  const u = new URL(db.url)
  u.username = ROLE[job]
  u.password = PASSWORD
  return u.toString()
}

/** An interlock.toml for one party, connecting as its own role. */
function configFile(job: Job, access: 'full' | 'agent' = 'full'): string {
  const file = join(cwd, `${job}.toml`)
  writeFileSync(
    file,
    `[store]
kind = "postgres"
url = "${urlAs(job)}"
schema = "${SCHEMA}"
access = "${access}"

[relay]
key = "relay.key"

[targets.refunds]
type = "http"
tier = 1
url = "http://127.0.0.1:9/refunds"

[targets.mail]
type = "http"
tier = 3
url = "http://127.0.0.1:9/mail"

[[operators]]
name = "alice"
public_key = "${alice.publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "refunds"
quorum = 1
when = [{ arg = "amount", above = "500.00", currency = "USD" }]
`,
  )
  return file
}

async function connectAs(job: Job): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: urlAs(job) })
  client.on('error', () => {})
  await client.connect()
  clients.push(client)
  return client
}

async function storeAs(job: Job, access: 'full' | 'agent' = 'full'): Promise<Store> {
  const store = await openStore({ kind: 'postgres', url: urlAs(job), schema: SCHEMA, access } satisfies PostgresStoreConfig)
  stores.push(store)
  return store
}

async function cli(job: Job, args: string[], access: 'full' | 'agent' = 'full'): Promise<Run> {
  return interlock([...args, '--config', configFile(job, access)], { cwd })
}

/** A statement to try, and the SQLSTATEs that count as its refusal (default: no privilege, 42501). */
type Attempt = string | { text: string; values?: unknown[]; refused?: readonly string[] }

/** Runs each statement; returns those PostgreSQL did not refuse. */
async function notRefused(client: pg.Client, attempts: readonly Attempt[]): Promise<string[]> {
  const slipped: string[] = []
  for (const a of attempts) {
    const q = typeof a === 'string' ? { text: a } : a
    const code = await client.query({ text: q.text, values: q.values ?? [] }).then(
      () => 'ok',
      (e: { code?: string }) => e.code ?? String(e),
    )
    if (!(q.refused ?? ['42501']).includes(code)) slipped.push(`${q.text.replace(/\s+/g, ' ').slice(0, 120)} → ${code}`)
  }
  return slipped
}

function request(e: Effect, tier: Tier): AppendRequest {
  return { effectId: e.id, from: null, to: 'PROPOSED', data: proposal(e, tier), effect: e, tier }
}

const refund = (thread: string, amount: string, key?: string): Effect =>
  toEffect({ thread, target: 'refunds', action: 'refund', args: { amount, currency: 'USD' }, premises: { charge: 'ch_1' }, key } satisfies EffectInput)

/** Every table, view, sequence and function of the schema, as the server lists them (so objects added later are covered too). */
async function schemaObjects(): Promise<{ tables: string[]; views: string[]; sequences: string[]; functions: { name: string; args: string[] }[] }> {
  const rel = await admin.query<{ relname: string; relkind: string }>(
    `SELECT relname, relkind::text FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind IN ('r', 'p', 'v', 'm', 'S') ORDER BY relname`,
    [SCHEMA],
  )
  const fns = await admin.query<{ proname: string; args: string }>(
    `SELECT proname, oidvectortypes(proargtypes) AS args FROM pg_proc WHERE pronamespace = $1::regnamespace ORDER BY proname`,
    [SCHEMA],
  )
  return {
    tables: rel.rows.filter((r) => r.relkind === 'r' || r.relkind === 'p').map((r) => r.relname),
    views: rel.rows.filter((r) => r.relkind === 'v' || r.relkind === 'm').map((r) => r.relname),
    sequences: rel.rows.filter((r) => r.relkind === 'S').map((r) => r.relname),
    functions: fns.rows.map((f) => ({ name: f.proname, args: f.args ? f.args.split(', ') : [] })),
  }
}

/** Each function called with NULLs of its argument types: refused before it runs when EXECUTE is not granted. */
function calls(functions: { name: string; args: string[] }[], except: readonly string[] = []): string[] {
  return functions.filter((f) => !except.includes(f.name)).map((f) => `SELECT * FROM "${SCHEMA}".${f.name}(${f.args.map((a) => `NULL::${a}`).join(', ')})`)
}

/**
 * Each kind of write to a table or view, refused before it looks at a row. A view
 * PostgreSQL cannot write through at all (a join) may say so (55000) before it asks for the privilege.
 */
function writesTo(relation: string, column: string, view: boolean): Attempt[] {
  const refused = view ? ['42501', '55000'] : ['42501']
  return [
    { text: `INSERT INTO "${SCHEMA}".${relation} DEFAULT VALUES`, refused },
    { text: `UPDATE "${SCHEMA}".${relation} SET ${column} = ${column}`, refused },
    { text: `DELETE FROM "${SCHEMA}".${relation}`, refused },
    ...(view ? [] : [`TRUNCATE "${SCHEMA}".${relation}`]),
  ]
}

/** Every kind of write to every table and view of the schema. */
async function everyWrite(objects: { tables: string[]; views: string[] }): Promise<Attempt[]> {
  const writes: Attempt[] = []
  for (const t of objects.tables) writes.push(...writesTo(t, await firstColumn(t), false))
  for (const v of objects.views) writes.push(...writesTo(v, await firstColumn(v), true))
  return writes
}

async function firstColumn(relation: string): Promise<string> {
  const { rows } = await admin.query<{ attname: string }>(
    `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum LIMIT 1`,
    [`"${SCHEMA}".${relation}`],
  )
  return rows[0]!.attname
}

beforeAll(async () => {
  db = await createTestDatabase()
  admin = new pg.Client({ connectionString: db.url })
  admin.on('error', () => {})
  await admin.connect()
  for (const name of Object.values(ROLE)) await admin.query(`CREATE ROLE ${name} LOGIN PASSWORD '${PASSWORD}'`)
  cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-roles-'))
  alice = generateKeyPair('operator', 'alice')
  writeKeyFile(join(cwd, 'alice.operator.key'), alice)
  relayKey = generateKeyPair('relay', 'relay-1')
  writeKeyFile(join(cwd, 'relay.key'), relayKey)

  // 1. As a superuser: the schema, owned by the installer (what --installer prints).
  const before = await cli('installer', ['install', '--print-grants', '--installer', ROLE.installer])
  expect(before.code, before.stderr).toBe(0)
  await admin.query(before.stdout)
  // 2. As the installer, which has no right to create schemas in the database: the install.
  const installed = await cli('installer', ['install'])
  expect(installed.stderr).toBe('')
  expect(installed.code).toBe(0)
  // 3. As the installer: every other role's grants, exactly as printed.
  const grants = await cli('installer', [
    'install', '--print-grants',
    '--agent', ROLE.agent, '--agent', ROLE.otherAgent,
    '--relay', ROLE.relay, '--operator', ROLE.operator, '--read-only', ROLE.auditor, '--pruner', ROLE.pruner,
  ])
  expect(grants.code, grants.stderr).toBe(0)
  const installer = await connectAs('installer')
  await installer.query(grants.stdout)
}, 180_000)

afterAll(async () => {
  for (const s of stores) await s.close().catch(() => {})
  for (const c of [...clients, admin]) await c?.end().catch(() => {})
  await db?.drop()
  // The roles own nothing once their database is gone.
  const server = new pg.Client({ connectionString: testServerUrl() })
  await server.connect()
  try {
    for (const name of Object.values(ROLE)) await server.query(`DROP ROLE IF EXISTS ${name}`)
  } finally {
    await server.end()
  }
})

describe('the installer', () => {
  it('owns the schema and everything in it, and holds no right to create schemas in the database', async () => {
    const owners = await admin.query<{ owner: string; n: string }>(
      `SELECT pg_get_userbyid(relowner) AS owner, count(*) AS n FROM pg_class WHERE relnamespace = $1::regnamespace GROUP BY 1`,
      [SCHEMA],
    )
    expect(owners.rows.map((r) => r.owner)).toEqual([ROLE.installer])
    const rights = await admin.query<{ create: boolean; owner: string }>(
      `SELECT has_database_privilege($1, current_database(), 'CREATE') AS create, pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = $2`,
      [ROLE.installer, SCHEMA],
    )
    expect(rights.rows[0]).toEqual({ create: false, owner: ROLE.installer })
    // Idempotent, as the installer.
    const again = await cli('installer', ['install', '--json'])
    expect(again.code, again.stderr).toBe(0)
    expect(json(again)).toMatchObject({ applied: [], pending: [] })
  })
})

describe('the grants', () => {
  it('name every table, view, sequence and function of the schema: a migration that adds one adds its grants', async () => {
    const printed = await cli('installer', ['install', '--print-grants', '--read-only', ROLE.auditor, '--agent', ROLE.agent, '--relay', ROLE.relay, '--operator', ROLE.operator])
    expect(printed.code, printed.stderr).toBe(0)
    const objects = await schemaObjects()
    const all = [...objects.tables, ...objects.views, ...objects.sequences, ...objects.functions.map((f) => f.name)]
    expect(all.filter((name) => !printed.stdout.includes(`"${SCHEMA}".${name}`))).toEqual([])
  })
})

describe('the agent role', () => {
  it('is refused, by the database, every write but a proposal: tables, functions, the lease sequence, leases, releases, receipts, relay rows', async () => {
    const agent = await connectAs('agent')
    const objects = await schemaObjects()
    const writes = await everyWrite(objects)
    const lease = leaseStatements(SCHEMA)
    const id = refund('agent-thread', '1.00').id
    expect(objects.tables).toEqual(expect.arrayContaining(['effects', 'journal_records', 'journals', 'relays', 'schema_migrations']))
    expect(objects.functions.map((f) => f.name)).toEqual(expect.arrayContaining(['append', 'append_chain', 'append_chains', 'append_each', 'append_step', 'claim', 'propose']))
    const slipped = await notRefused(agent, [
      ...writes,
      // Reading any table: only the two views of its own effects (and the schema version) are its to read.
      ...objects.tables.filter((t) => t !== 'schema_migrations').map((t) => `SELECT * FROM "${SCHEMA}".${t}`),
      ...calls(objects.functions, ['propose', 'remember_read']),
      ...objects.sequences.flatMap((s) => [`SELECT nextval('"${SCHEMA}".${s}')`, `SELECT setval('"${SCHEMA}".${s}', 1)`]),
      // Leases: claiming, renewing, releasing.
      { text: lease.claimReady, values: [ROLE.agent, 10, 30_000, null, null, ['PROPOSED']] },
      { text: lease.claimOther(['HELD'], false, false), values: [ROLE.agent, 10, 30_000] },
      { text: lease.renew, values: [ROLE.agent, [id], [1], 30_000] },
      { text: lease.release, values: [ROLE.agent, [id], [1]] },
      // A relay row (heartbeat).
      { text: lease.heartbeat, values: [ROLE.agent, '{}'] },
      // Moving an effect past PROPOSED, a release (HELD → HELD) and a receipt (COMMITTED), through the functions relays use.
      ...(['AUTHORIZED', 'HELD', 'COMMITTED'] as const).map((to) => ({
        text: `SELECT "${SCHEMA}".append_step($1, $2, $3, $4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, $5, $6, $7)`,
        values: [id, to === 'HELD' ? 'HELD' : to === 'COMMITTED' ? 'DISPATCHED' : 'PROPOSED', to, '{"release":{}}', new Date().toISOString(), GENESIS_HASH, SCHEMA],
      })),
      // Or by hand, as a record and a row.
      {
        text: `INSERT INTO "${SCHEMA}".journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash) VALUES ($1, 2, $2, 'COMMITTED', $3, '{"receipt":{}}', $4, $4)`,
        values: ['agent-thread', id, new Date().toISOString(), GENESIS_HASH],
      },
      `UPDATE "${SCHEMA}".own_effects SET state = 'AUTHORIZED'`,
      // Objects of its own in the schema, or taking another role's rights.
      `CREATE TABLE "${SCHEMA}".mine (a int)`,
      `CREATE FUNCTION "${SCHEMA}".mine() RETURNS int LANGUAGE sql AS 'SELECT 1'`,
      `ALTER TABLE "${SCHEMA}".effects DISABLE TRIGGER ALL`,
      `SET ROLE ${ROLE.relay}`,
      `SET ROLE ${ROLE.installer}`,
    ])
    expect(slipped).toEqual([])
    // Nothing of the above left a trace.
    const left = await admin.query(`SELECT count(*)::int AS n FROM "${SCHEMA}".journal_records WHERE effect_id = $1`, [id])
    expect(left.rows[0].n).toBe(0)
  })

  it('proposes and reads its own effects through its store; the store refuses, before sending, anything but a proposal', async () => {
    const store = await storeAs('agent', 'agent')
    const e = refund('agent-own', '3.00')
    const [r] = await store.append([request(e, 1)])
    expect(r).toMatchObject({ ok: true, record: { journal: 'agent-own', seq: 1, state: 'PROPOSED', prevHash: GENESIS_HASH } })
    expect((await store.get(e.id))?.state).toBe('PROPOSED')
    expect((await store.history(e.id)).map((h) => h.state)).toEqual(['PROPOSED'])
    expect((await store.list({ thread: 'agent-own' })).map((s) => s.effect.id)).toEqual([e.id])
    // Proposing it again is not an error: the effect as it stands comes back.
    const [again] = await store.append([request(e, 1)])
    expect(again).toMatchObject({ ok: false, current: { state: 'PROPOSED' } })

    for (const bad of [
      { effectId: e.id, from: 'PROPOSED', to: 'AUTHORIZED', data: {} },
      { effectId: e.id, from: 'PROPOSED', to: 'HELD', data: { rule: 'x' } },
      { ...request(e, 1), lease: { relay: 'r', token: 1 } },
      { ...request(e, 1), data: { effect: {}, tier: 1, release: { operator: 'alice' } } },
    ] as AppendRequest[]) {
      const err = await store.append([bad]).catch((x: unknown) => x)
      expect(err, JSON.stringify(bad.to)).toBeInstanceOf(StoreError)
      expect((err as Error).message).toMatch(/agent access, which can only propose effects/)
    }
    for (const op of [() => store.claim({ relay: 'r', limit: 1, leaseMs: 1000 }), () => store.heartbeat('r', {}), () => store.relays(), () => store.scanInFlight()]) {
      await expect((async () => op())()).rejects.toThrow(/not open to agent access/)
    }
    expect((await store.get(e.id))?.state).toBe('PROPOSED')
  })

  it('cannot read another role\'s effects, nor propose into its threads or as its effects', async () => {
    const mine = await storeAs('agent', 'agent')
    const theirs = await storeAs('otherAgent', 'agent')
    const secret = refund('their-thread', '77.00')
    expect((await theirs.append([request(secret, 1)]))[0]!.ok).toBe(true)

    expect(await mine.get(secret.id)).toBeUndefined()
    expect(await mine.history(secret.id)).toEqual([])
    expect((await mine.list()).map((s) => s.effect.id)).not.toContain(secret.id)
    expect((await mine.countByState()).PROPOSED).toBe((await mine.list({ states: ['PROPOSED'] })).length)
    const raw = await connectAs('agent')
    expect((await raw.query(`SELECT count(*)::int AS n FROM "${SCHEMA}".own_effects WHERE id = $1`, [secret.id])).rows[0].n).toBe(0)
    expect((await raw.query(`SELECT count(*)::int AS n FROM "${SCHEMA}".own_records WHERE effect_id = $1`, [secret.id])).rows[0].n).toBe(0)

    // The same effect (same thread, so the same id): refused, named, nothing written.
    await expect(mine.append([request(secret, 1)])).rejects.toThrow(/thread "their-thread" was started by another database role/)
    await expect(mine.append([request(refund('their-thread', '1.00'), 1)])).rejects.toThrow(/started by another database role/)
    // Its own thread, but an id forged to be the other's effect: refused too.
    const forged = refund('mine-forged', '1.00')
    const spoof = { ...forged, id: secret.id }
    await expect(mine.append([{ ...request(spoof, 1) }])).rejects.toThrow(/proposed by another database role/)
    expect((await theirs.get(secret.id))?.state).toBe('PROPOSED')
    expect((await theirs.history(secret.id)).length).toBe(1)
  })

  it('proposes an effect that says who asked and in which trace; keeps its callers\' reads, which another role cannot see', async () => {
    const mine = await storeAs('agent', 'agent')
    const theirs = await storeAs('otherAgent', 'agent')
    const asked = toEffect({ thread: 'agent-callers', target: 'refunds', action: 'refund', args: { amount: '2.00', currency: 'USD' }, principal: 'token:ci-bot', trace: { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` } })
    expect((await mine.append([request(asked, 1)]))[0]).toMatchObject({ ok: true, record: { data: { effect: { principal: 'token:ci-bot', trace: asked.trace } } } })
    expect((await mine.get(asked.id))?.effect).toEqual(asked)
    expect((await mine.list({ principal: 'token:ci-bot' })).map((s) => s.effect.id)).toEqual([asked.id])

    const scope = { principal: 'token:ci-bot', thread: 'agent-callers', target: 'fs' }
    await mine.rememberRead(scope, 'a'.repeat(64), 'b'.repeat(64))
    expect(await mine.recallRead(scope, 'a'.repeat(64))).toBe('b'.repeat(64))
    expect(await theirs.recallRead(scope, 'a'.repeat(64))).toBeUndefined()
    await theirs.rememberRead(scope, 'a'.repeat(64), 'c'.repeat(64))
    expect(await mine.recallRead(scope, 'a'.repeat(64))).toBe('b'.repeat(64))
    // Straight to the database: the table is no agent's to read or write, only through remember_read() and its view.
    const raw = await connectAs('agent')
    expect(await notRefused(raw, [`SELECT * FROM "${SCHEMA}".thread_reads`, `DELETE FROM "${SCHEMA}".own_thread_reads`])).toEqual([])
    const bad = await raw.query(`SELECT "${SCHEMA}".remember_read('p', 't', 'fs', 'not-a-digest', 'x')`).catch((x: { code?: string }) => x)
    expect(bad).toHaveProperty('code', '22023')
  })

  it('the database checks a proposal itself: a row its effect does not match, or a malformed one, is refused', async () => {
    const raw = await connectAs('agent')
    const e = refund('agent-raw', '5.00')
    const text = (x: object) => JSON.stringify(x)
    const good = { id: e.id, thread: e.thread, target: e.target, action: e.action, args: e.args, premises: e.premises }
    const call = (effect: string, over: Partial<Record<'id' | 'thread' | 'target' | 'action', string>> = {}, tier = 1) =>
      raw.query(`SELECT * FROM "${SCHEMA}".propose($1, $2, $3, $4, $5, $6)`, [
        [over.id ?? e.id], [over.thread ?? e.thread], [over.target ?? e.target], [over.action ?? e.action], [tier], [effect],
      ])
    for (const [why, attempt] of [
      ['another target in the row', () => call(text(good), { target: 'mail' })],
      ['another id in the effect', () => call(text({ ...good, id: 'f'.repeat(64) }))],
      ['a state smuggled in', () => call(text({ ...good, state: 'AUTHORIZED' }))],
      ['not an object', () => call('[1]')],
      ['not JSON', () => call('{"id":')],
      ['a tier that does not exist', () => call(text(good), {}, 4)],
      ['a thread that is not a name', () => call(text({ ...good, thread: 'a\nb' }), { thread: 'a\nb' })],
    ] as const) {
      const err = await attempt().catch((x: { code?: string }) => x)
      expect(err, why).toHaveProperty('code')
      expect(['22023', '22P02'], why).toContain((err as { code: string }).code)
    }
    expect((await raw.query(`SELECT count(*)::int AS n FROM "${SCHEMA}".own_effects WHERE thread = 'agent-raw'`)).rows[0].n).toBe(0)
  })

  it('`interlock check` accepts the store as the agent role sees it', async () => {
    const run = await cli('agent', ['check', '--only', 'store', '--json'], 'agent')
    expect(run.code, run.stdout + run.stderr).toBe(0)
    expect(json(run).checks.filter((c: { family: string }) => c.family === 'store').every((c: { status: string }) => c.status === 'pass')).toBe(true)
  })
})

describe('the agent, the relay, the operator and the auditor at work, each as its own role', () => {
  // Some twenty runs of the binary, each a few seconds on a loaded machine.
  it('the agent proposes, a relay role drains, results wake the agent; the operator releases and resolves; the auditor reads and verifies', async () => {
    const agentStore = await storeAs('agent', 'agent')
    const relayStore = await storeAs('relay')
    const refunds = new CountingTarget('refunds', 1)
    const mail = new CountingTarget('mail', 3)
    mail.faults.push({ kind: 'unknown', afterApplying: true })
    const config = parseConfig(`[[policy.rules]]
name = "large-refunds"
target = "refunds"
quorum = 1
when = [{ arg = "amount", above = "500.00", currency = "USD" }]
[[operators]]
name = "alice"
public_key = "${alice.publicKey}"
`, { file: join(cwd, 'x.toml'), env: {} })
    const logs: string[] = []
    // A short lease: a relay keeps its lease on an effect it left HELD until the lease runs out, so the
    // released effect is claimed again only then.
    const relay = new Relay({
      store: relayStore, targets: [refunds, mail], relayId: 'relay-1', key: relayKey,
      policy: new RulesPolicy(config.policy.rules), operators: config.operators, pollMs: 200, leaseMs: 1_000, retry: { maxAttempts: 1, backoffMs: 0 },
      log: (line) => logs.push(line),
    })
    await relay.start()
    // The agent's long poll: only a notification can wake its result() within the test's time.
    const outbox = new Outbox({ store: agentStore, targets: [refunds, mail], pollMs: 120_000 })
    // Relays are woken by the agent's proposals: propose() notifies at commit.
    const listener = await connectAs('auditor')
    const woken: string[] = []
    listener.on('notification', (n) => woken.push(`${n.channel} ${n.payload}`))
    await listener.query('LISTEN interlock_ready')
    try {
      const small = refund('agent-run', '12.00')
      const large = refund('agent-run', '900.00')
      const send = toEffect({ thread: 'agent-run', target: 'mail', action: 'send', args: { to: 'a@example.com' } })
      const proposed = await agentStore.append([request(small, 1), request(large, 1), request(send, 3)])
      expect(proposed.map((p) => p.ok)).toEqual([true, true, true])

      const outcomes = await Promise.all([outbox.result(small.id), outbox.result(large.id), outbox.result(send.id)])
      expect(woken).toContain(`interlock_ready ${SCHEMA}`)
      expect(outcomes.map((o) => o.status)).toEqual(['committed', 'held', 'ambiguous'])
      expect(refunds.count(small.id)).toBe(1)
      expect(refunds.count(large.id)).toBe(0)

      // The operator, as its role, through the binary: release the held refund, resolve the ambiguous mail.
      const release = await cli('operator', ['outbox', 'release', large.id, '--key', join(cwd, 'alice.operator.key'), '--yes', '--json'])
      expect(release.code, release.stderr).toBe(0)
      expect(json(release)).toMatchObject({ state: 'AUTHORIZED' })
      const done = await outbox.result(large.id)
      expect(done.status).toBe('committed')
      expect(refunds.count(large.id)).toBe(1)
      const resolve = await cli('operator', ['outbox', 'resolve', send.id, '--applied', '--key', join(cwd, 'alice.operator.key'), '--yes', '--json'])
      expect(resolve.code, resolve.stderr).toBe(0)
      expect((await agentStore.get(send.id))?.state).toBe('COMMITTED')
      // The agent reads its effects' whole histories, chain-checked.
      expect((await agentStore.history(large.id)).map((r) => r.state)).toEqual(['PROPOSED', 'HELD', 'HELD', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    } finally {
      await outbox.close()
      const stats = await relay.stop()
      expect(stats.storeErrors, logs.join('\n')).toBe(0)
    }
    expect(logs.join('\n')).not.toMatch(/permission denied/)
    const beat = await admin.query(`SELECT relay FROM "${SCHEMA}".relays`)
    expect(beat.rows.map((r) => r.relay)).toContain('relay-1')
    // reconcile-effects runs as the relay role too: its lock, its claims of ready and HELD effects.
    const reconcile = await cli('relay', ['reconcile-effects', '--json'])
    expect(reconcile.code, reconcile.stdout + reconcile.stderr).toBe(0)

    // The auditor, read-only, through the binary: status, list, show, verify, export.
    const status = await cli('auditor', ['outbox', 'status', '--json'])
    expect(status.code, status.stderr).toBe(0)
    expect(json(status).counts).toMatchObject({ HELD: 0, AMBIGUOUS: 0, AUTHORIZED: 0, DISPATCHED: 0 })
    expect(json(status).relays.map((r: { relay: string }) => r.relay)).toEqual(['relay-1'])
    const list = await cli('auditor', ['outbox', 'list', '--json'])
    expect(list.code, list.stderr).toBe(0)
    const listed = new Map(json(list).effects.map((e: { effectId: string; state: string }) => [e.effectId, e.state]))
    for (const e of [refund('agent-run', '12.00'), refund('agent-run', '900.00')]) expect(listed.get(e.id)).toBe('COMMITTED')
    const show = await cli('auditor', ['outbox', 'show', refund('agent-run', '900.00').id, '--json'])
    expect(show.code, show.stderr).toBe(0)
    const verify = await cli('auditor', ['outbox', 'verify', '--json'])
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    const out = join(cwd, 'export.jsonl')
    const exported = await cli('auditor', ['outbox', 'export', '--out', out, '--json'])
    expect(exported.code, exported.stderr).toBe(0)
    expect(existsSync(out)).toBe(true)

    // A deploy's `interlock install` with nothing pending, as roles that may create nothing: it succeeds and
    // writes nothing, and its dry run says the same.
    for (const job of ['relay', 'auditor'] as const) {
      for (const dry of [['--dry-run'], []]) {
        const install = await cli(job, ['install', ...dry, '--json'])
        expect(install.code, `${job} ${dry.join(' ')}: ${install.stderr}`).toBe(0)
        expect(json(install)).toMatchObject({ pending: [], applied: [] })
      }
    }

    // Retention is the pruner's job: the read-only role may not delete, and nothing is deleted.
    const refused = await cli('auditor', ['outbox', 'prune', '--older-than', '0s', '--archive', join(cwd, 'refused.jsonl'), '--key', join(cwd, 'alice.operator.key')])
    expect(refused.code, refused.stderr).toBe(4)
    expect(json(await cli('auditor', ['outbox', 'list', '--json'])).effects.map((e: { effectId: string }) => e.effectId)).toContain(refund('agent-run', '12.00').id)
    // Pinning settled history is an operator's or a relay's job: the read-only role may not store a checkpoint.
    const unpinned = await cli('auditor', ['outbox', 'checkpoint', '--key', join(cwd, 'alice.operator.key')])
    expect(unpinned.code, unpinned.stderr).toBe(4)
    const pinned = await cli('operator', ['outbox', 'checkpoint', '--key', join(cwd, 'alice.operator.key'), '--json'])
    expect(pinned.code, pinned.stdout + pinned.stderr).toBe(0)
    expect(json(pinned).journals).toBeGreaterThan(0)
    // As the pruner role: settled history archived under alice's checkpoint, then deleted.
    const archive = join(cwd, 'archive.jsonl')
    const pruned = await cli('pruner', ['outbox', 'prune', '--older-than', '0s', '--archive', archive, '--key', join(cwd, 'alice.operator.key'), '--json'])
    expect(pruned.code, pruned.stdout + pruned.stderr).toBe(0)
    expect(json(pruned).effects).toBeGreaterThanOrEqual(3)
    expect(listed.size).toBeGreaterThan(0)
    const left = json(await cli('auditor', ['outbox', 'list', '--json'])).effects.map((e: { effectId: string }) => e.effectId)
    for (const e of [refund('agent-run', '12.00'), refund('agent-run', '900.00')]) expect(left).not.toContain(e.id)
    // The auditor verifies the store (pruned journals from the stored checkpoint on) and the archive.
    const after = await cli('auditor', ['outbox', 'verify', '--json'])
    expect(after.code, after.stdout + after.stderr).toBe(0)
    const archived = await cli('auditor', ['outbox', 'verify', '--file', archive, '--json'])
    expect(archived.code, archived.stdout + archived.stderr).toBe(0)
  }, 240_000)

  it('the relay role is refused what is not its job: creating effects, rewriting what an effect is, rewriting or deleting records, proposing', async () => {
    const relay = await connectAs('relay')
    const anyId = (await admin.query<{ id: string }>(`SELECT id FROM "${SCHEMA}".effects LIMIT 1`)).rows[0]?.id ?? 'none'
    const slipped = await notRefused(relay, [
      `INSERT INTO "${SCHEMA}".effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
       VALUES ('x', 'j', 'j', 't', 'a', 1, '{}', 'AUTHORIZED', 1, '{}', now(), now())`,
      { text: `UPDATE "${SCHEMA}".effects SET effect = '{"args":{"amount":"99999"}}' WHERE id = $1`, values: [anyId] },
      { text: `UPDATE "${SCHEMA}".effects SET proposed_by = 'someone' WHERE id = $1`, values: [anyId] },
      `UPDATE "${SCHEMA}".journal_records SET data = '{}'`,
      `DELETE FROM "${SCHEMA}".journal_records`,
      `DELETE FROM "${SCHEMA}".effects`,
      `INSERT INTO "${SCHEMA}".journals (journal, head_seq, head_hash) VALUES ('j', 0, '0')`,
      `UPDATE "${SCHEMA}".schema_migrations SET checksum = 'x'`,
      `SELECT * FROM "${SCHEMA}".propose(NULL::text[], NULL::text[], NULL::text[], NULL::text[], NULL::smallint[], NULL::text[])`,
    ])
    expect(slipped).toEqual([])
  })

  it('the operator role is refused a relay\'s work (leases, the lease sequence, relay rows) and rewriting what an effect is or who proposed it', async () => {
    const operator = await connectAs('operator')
    const lease = leaseStatements(SCHEMA)
    const slipped = await notRefused(operator, [
      { text: lease.claimReady, values: [ROLE.operator, 10, 30_000, null, null, ['PROPOSED']] },
      { text: lease.claimOther(['HELD'], false, false), values: [ROLE.operator, 10, 30_000] },
      { text: lease.heartbeat, values: ['op', '{}'] },
      `SELECT nextval('"${SCHEMA}".lease_tokens')`,
      `UPDATE "${SCHEMA}".effects SET lease_token = 1`,
      `UPDATE "${SCHEMA}".effects SET effect = '{}'`,
      `INSERT INTO "${SCHEMA}".effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at, proposed_by)
       VALUES ('x', 'j', 'j', 't', 'a', 1, '{}', 'PROPOSED', 1, '{}', now(), now(), '${ROLE.agent}')`,
      `DELETE FROM "${SCHEMA}".journal_records`,
      `UPDATE "${SCHEMA}".journal_records SET data = '{}'`,
    ])
    expect(slipped).toEqual([])
    // What it may do besides releases and resolutions: a compensation is a new effect, filed as the operator's.
    const store = await storeAs('operator')
    const compensation = refund('operator-thread', '4.00')
    expect((await store.append([request(compensation, 1)]))[0]!.ok).toBe(true)
    const row = await admin.query(`SELECT proposed_by FROM "${SCHEMA}".effects WHERE id = $1`, [compensation.id])
    expect(row.rows).toEqual([{ proposed_by: ROLE.operator }])
  })

  it('the read-only role is refused every write and every function', async () => {
    const auditor = await connectAs('auditor')
    const objects = await schemaObjects()
    const writes = await everyWrite(objects)
    const slipped = await notRefused(auditor, [
      ...writes,
      ...calls(objects.functions),
      ...objects.sequences.map((s) => `SELECT nextval('"${SCHEMA}".${s}')`),
    ])
    expect(slipped).toEqual([])
  })
})
