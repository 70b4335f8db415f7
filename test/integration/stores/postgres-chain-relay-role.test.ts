/**
 * What a relay's database role can do through the batch appends when it calls
 * them itself, with arguments no Interlock client would send. A relay is
 * semi-trusted (docs/design.md, "The trust boundary"): it may move effects;
 * it may not create one, nor change what one is. append_chain() and
 * append_chains() run with the caller's rights (no SECURITY DEFINER), so
 * the grants the relay holds (grants.ts) bound what a crafted call writes:
 * a proposal is refused by the database, a chain that jumps to another
 * effect is refused by the function, and a chain that skips a lifecycle
 * state (which the relay could also write into the tables it may insert
 * into) is written, signed by nobody, and refused by recovery's check of
 * what is in flight before anything acts on it.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { IntegrityError } from '../../../src/core/errors.js'
import { install } from '../../../src/core/stores/migrate.js'
import { latestVersion } from '../../../src/core/stores/migrations.js'
import { grantsSql } from '../../../src/core/stores/postgres/grants.js'
import { quoteSchema } from '../../../src/core/stores/postgres/identifier.js'
import { openPostgresStore } from '../../../src/core/stores/postgres/open.js'
import { GENESIS_HASH, type Store } from '../../../src/core/stores/store.js'
import { drive, effect } from '../../contract/fixtures.js'
import { journalViolations } from '../../helpers/pg-journal-invariants.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

const PASSWORD = 'chain-relay-role'
// Roles belong to the whole server: names of this file's own.
const tag = randomBytes(4).toString('hex')
const ROLE = { relay: `il_${tag}_relay`, agent: `il_${tag}_agent`, reader: `il_${tag}_reader`, operator: `il_${tag}_operator` }
const SCHEMA = 'relay_role'

let db: TestDatabase
let admin: pg.Client
let relay: pg.Client
let store: Store
beforeAll(async () => {
  db = await createTestDatabase()
  admin = new pg.Client({ connectionString: db.url })
  await admin.connect()
  for (const name of Object.values(ROLE)) await admin.query(`CREATE ROLE ${name} LOGIN PASSWORD '${PASSWORD}'`)
  await install({ kind: 'postgres', url: db.url, schema: SCHEMA })
  await admin.query(
    grantsSql(SCHEMA, { relay: [ROLE.relay], agent: [ROLE.agent], readOnly: [ROLE.reader], operator: [ROLE.operator] }, latestVersion('postgres')),
  )
  const u = new URL(db.url)
  u.username = ROLE.relay
  u.password = PASSWORD
  relay = new pg.Client({ connectionString: u.toString() })
  await relay.connect()
  store = await openPostgresStore({ kind: 'postgres', url: db.url, schema: SCHEMA }, { autoInstall: false })
})
afterAll(async () => {
  await relay?.end()
  await store?.close()
  await admin?.end()
  await db?.drop()
  for (const name of Object.values(ROLE)) await admin?.query(`DROP ROLE IF EXISTS ${name}`).catch(() => undefined)
})

const s = quoteSchema(SCHEMA)

interface Req {
  id: string
  from: string | null
  to: string
  thread?: string
  chained?: boolean
}

/** append_chains() as the relay's role calls it, with whatever arguments it chooses. */
function appendChains(client: pg.Client, reqs: Req[]) {
  const col = <T>(f: (r: Req) => T) => reqs.map(f)
  return client.query<{ ok: boolean }>(
    `SELECT ok FROM ${s}.append_chains($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::smallint[],
       $9::text[], $10::text[], $11::bigint[], $12::text[], $13::boolean[], $14, $15, $16)`,
    [
      col((r) => r.id), col((r) => r.from), col((r) => r.to), col(() => '{}'), col((r) => r.thread ?? null),
      col((r) => (r.thread ? 'svc' : null)), col((r) => (r.thread ? 'do' : null)), col((r) => (r.thread ? 1 : null)),
      col((r) => (r.thread ? '{}' : null)), col(() => null), col(() => null), col(() => null), col((r) => r.chained ?? false),
      new Date().toISOString(), GENESIS_HASH, SCHEMA,
    ],
  )
}

async function snapshot(): Promise<string> {
  const { rows } = await admin.query(
    `SELECT (SELECT json_agg(r ORDER BY journal, seq) FROM ${s}.journal_records r)::text AS records,
            (SELECT json_agg(e ORDER BY id) FROM ${s}.effects e)::text AS effects,
            (SELECT json_agg(h ORDER BY journal) FROM ${s}.journals h)::text AS heads`,
  )
  return JSON.stringify(rows[0])
}

const refusal = (p: Promise<unknown>) => p.then(() => ({ code: 'none' }), (e: { code?: string; message?: string }) => e)

describe("the batch appends called by a relay's role", () => {
  it('only the relay and the operator may execute append_chain() and append_chains(); the agent, the read-only role and PUBLIC may not', async () => {
    const { rows } = await admin.query<{ role: string; fn: string; may: boolean }>(
      `SELECT r.role, p.proname AS fn, has_function_privilege(r.role, p.oid, 'EXECUTE') AS may
         FROM pg_proc p, unnest($1::text[]) AS r(role)
        WHERE p.pronamespace = to_regnamespace($2) AND p.proname IN ('append_chain', 'append_chains', 'append_step')
        ORDER BY 1, 2`,
      [Object.values(ROLE), SCHEMA],
    )
    const may = Object.fromEntries(Object.values(ROLE).map((role) => [role, rows.filter((r) => r.role === role && r.may).map((r) => r.fn)]))
    expect(may).toEqual({
      [ROLE.relay]: ['append_chain', 'append_chains', 'append_step'],
      [ROLE.operator]: ['append_chain', 'append_chains', 'append_step'],
      [ROLE.agent]: [],
      [ROLE.reader]: [],
    })
    const { rows: pub } = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_proc p CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
        WHERE p.pronamespace = to_regnamespace($1) AND a.grantee = 0 AND a.privilege_type = 'EXECUTE'`,
      [SCHEMA],
    )
    expect(pub[0]!.n, 'functions PUBLIC may execute').toBe(0)
  })

  it('a proposal in a crafted batch (a new effect, a chain onto it) is refused by the database, and the batch writes nothing', async () => {
    const e = effect('rr1', 1)
    const f = effect('rr1', 2)
    await drive(store, e, 'PROPOSED')
    const before = await snapshot()
    const batch = appendChains(relay, [
      { id: e.id, from: 'PROPOSED', to: 'AUTHORIZED' },
      { id: f.id, from: null, to: 'PROPOSED', thread: 'rr1' },
      { id: f.id, from: 'PROPOSED', to: 'AUTHORIZED', chained: true },
    ])
    expect(await refusal(batch)).toMatchObject({ code: '42501' })
    // append_chain(): a proposal with its chain, into a journal that exists and into one that does not.
    for (const thread of ['rr1', 'rr-new']) {
      const one = relay.query(
        `SELECT ${s}.append_chain($1, NULL, ARRAY['PROPOSED','AUTHORIZED'], ARRAY['{}','{}'], $2, 'svc', 'do', 1::smallint, '{}', NULL, NULL, NULL, $3, $4, $5)`,
        [effect(thread, 3).id, thread, new Date().toISOString(), GENESIS_HASH, SCHEMA],
      )
      expect(await refusal(one)).toMatchObject({ code: '42501' })
    }
    expect(await snapshot()).toBe(before)
  })

  it("a chain that jumps to another journal's effect is refused whole; the chains before it in the batch are not written either", async () => {
    const e = effect('rr2', 1)
    const f = effect('rr3', 1)
    await drive(store, e, 'PROPOSED')
    await drive(store, f, 'AUTHORIZED')
    const before = await snapshot()
    const batch = appendChains(relay, [
      { id: e.id, from: 'PROPOSED', to: 'AUTHORIZED' },
      { id: e.id, from: 'AUTHORIZED', to: 'DISPATCHED', chained: true },
      { id: f.id, from: 'AUTHORIZED', to: 'DISPATCHED', chained: true },
    ])
    expect(await refusal(batch)).toMatchObject({ code: '22023', message: expect.stringContaining('does not continue') })
    expect(await snapshot()).toBe(before)
  })

  it('a chain that skips a lifecycle state is written by the function (the relay may insert records), and recovery refuses to act on it', async () => {
    const e = effect('rr4', 1)
    await drive(store, e, 'PROPOSED')
    const { rows } = await appendChains(relay, [
      { id: e.id, from: 'PROPOSED', to: 'DISPATCHED' },
      { id: e.id, from: 'DISPATCHED', to: 'COMMITTED', chained: true },
      { id: effect('rr4', 9).id, from: 'AUTHORIZED', to: 'DISPATCHED' },
    ])
    expect(rows.map((r) => r.ok)).toEqual([true, true, false])
    expect(await journalViolations(admin, SCHEMA)).toEqual([`effect ${e.id}: PROPOSED -> DISPATCHED at rr4 #2 is not a transition`])
    // Settled: only `outbox verify` reads it. Left in flight, recovery reads it first and acts on nothing.
    const g = effect('rr5', 1)
    await drive(store, g, 'PROPOSED')
    expect((await appendChains(relay, [{ id: g.id, from: 'PROPOSED', to: 'DISPATCHED' }, { id: g.id, from: 'DISPATCHED', to: 'AMBIGUOUS', chained: true }])).rows.map((r) => r.ok)).toEqual([true, true])
    const refused = await store.scanInFlight().catch((x: unknown) => x)
    expect(refused).toBeInstanceOf(IntegrityError)
    expect((refused as Error).message).toContain(`moves effect ${g.id} from PROPOSED to DISPATCHED, which the lifecycle forbids`)
  })
})
