/**
 * `outbox release` killed (SIGKILL, crash point after-release) right after
 * journaling the release that completes a quorum, before HELD → AUTHORIZED:
 * `reconcile-effects` finishes it (dry run first), the service applies it
 * once, and `outbox verify` passes. A denial killed right after its record
 * is already applied (one record), and reconcile leaves it alone. The built
 * binary, on SQLite and on PostgreSQL.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { CRASH_ENV } from '../../src/core/crash-points.js'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { Gate } from '../../src/core/gate.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'

let service: HttpService
let db: TestDatabase
beforeAll(async () => {
  assertCliBuilt()
  service = await startHttpService()
  db = await createTestDatabase()
})
afterAll(async () => {
  await service?.close()
  await db?.drop()
})

const STORES: Record<string, { toml: string; env: () => Record<string, string> }> = {
  SQLite: { toml: `[store]\npath = "journal.db"\n`, env: () => ({}) },
  PostgreSQL: { toml: `[store]\nkind = "postgres"\nurl = "\${INTERLOCK_DATABASE_URL}"\nschema = "crash_release"\n`, env: () => ({ INTERLOCK_DATABASE_URL: db.url }) },
}

interface Scene {
  cwd: string
  env: Record<string, string>
  ids: { stranded: string; denied: string; waiting: string }
  withStore<T>(fn: (s: Store) => Promise<T>): Promise<T>
}

async function scene(kind: string): Promise<Scene> {
  const cwd = mkdtempSync(join(tmpdir(), 'interlock-e2e-release-crash-'))
  const env = STORES[kind]!.env()
  const toml: string[] = [STORES[kind]!.toml, `[targets.refunds]\ntype = "http"\ntier = 1\nurl = "${service.url}/idempotent"\n`]
  for (const name of ['alice', 'bob']) {
    const pair = generateKeyPair('operator', name)
    writeKeyFile(join(cwd, `${name}.operator.key`), pair)
    toml.push(`[[operators]]\nname = "${name}"\npublic_key = "${pair.publicKey}"\n`)
  }
  toml.push(`[[policy.rules]]\nname = "large-refunds"\ntarget = "refunds"\nquorum = 2\nrelease_ttl = "15m"\nwhen = [{ arg = "amount", above = "500.00" }]\n`)
  writeFileSync(join(cwd, 'interlock.toml'), toml.join('\n'))
  const config = parseConfig(toml.join('\n'), { file: join(cwd, 'interlock.toml'), env })
  if (config.store.kind === 'postgres') await install(config.store)
  const withStore = async <T>(fn: (s: Store) => Promise<T>): Promise<T> => {
    const store = await openStore(config.store)
    try {
      return await fn(store)
    } finally {
      await store.close()
    }
  }
  // The agent's side: three refunds held for two operators.
  const ids = await withStore(async (store) => {
    const gate = new Gate({ store, targets: createTargets(config.targets).values(), policy: new RulesPolicy(config.policy.rules) })
    const held = async (amount: string) => {
      const o = await gate.submit({ thread: `agent-${kind}`, target: 'refunds', action: 'refund', args: { amount } })
      expect(o.status).toBe('held')
      return o.effectId
    }
    const out = { stranded: await held('900.00'), denied: await held('901.00'), waiting: await held('902.00') }
    await gate.close()
    return out
  })
  return { cwd, env, ids, withStore }
}

const release = (s: Scene, id: string, who: string, extra: string[] = [], crashAt?: string) =>
  interlock(['outbox', 'release', id, '--yes', '--key', join(s.cwd, `${who}.operator.key`), ...extra], { cwd: s.cwd, env: { ...s.env, ...(crashAt ? { [CRASH_ENV]: crashAt } : {}) } })
const applied = (id: string) => service.counts().idempotent[id] ?? 0
const settle = () => new Promise((r) => setTimeout(r, 20))

describe.each(Object.keys(STORES))('a release killed before AUTHORIZED, on %s', (kind) => {
  it('reconcile-effects authorizes it from the journaled quorum and it is applied once; a killed denial is already final', async () => {
    const s = await scene(kind)
    const { stranded, denied, waiting } = s.ids

    const first = await release(s, stranded, 'alice', ['--json'])
    expect(first.code, first.stderr).toBe(0)
    expect(JSON.parse(first.stdout)).toMatchObject({ state: 'HELD', quorum: { have: 1, need: 2 } })
    const killed = await release(s, stranded, 'bob', [], 'after-release')
    // SIGKILL: no exit code, nothing printed after the release was journaled.
    expect(killed.code, killed.stderr).toBeNull()
    await s.withStore(async (store) => {
      expect((await store.get(stranded))!.state).toBe('HELD')
      expect((await store.history(stranded)).filter((r) => r.data.release)).toHaveLength(2)
    })

    expect((await release(s, waiting, 'alice')).code).toBe(0)
    const deny = await release(s, denied, 'bob', ['--deny', '--reason', 'wrong customer'], 'after-rejected')
    expect(deny.code, deny.stderr).toBeNull()
    await s.withStore(async (store) => expect((await store.get(denied))!.state).toBe('REJECTED'))
    await settle()

    const dry = await interlock(['reconcile-effects', '--older-than', '1ms', '--dry-run', '--json'], { cwd: s.cwd, env: s.env })
    expect(dry.code, dry.stderr).toBe(0)
    const plan = JSON.parse(dry.stdout)
    const planned = Object.fromEntries(plan.report.effects.map((e: { effectId: string; plan: string }) => [e.effectId, e.plan]))
    expect(planned).toEqual({ [stranded]: 'authorize', [waiting]: 'wait' })
    expect(plan.waiting).toEqual({ ambiguous: 0, held: 1 })
    expect(applied(stranded)).toBe(0)
    await s.withStore(async (store) => expect((await store.get(stranded))!.state).toBe('HELD'))

    const run = await interlock(['reconcile-effects', '--older-than', '1ms'], { cwd: s.cwd, env: s.env })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/authorized/)
    expect(run.stdout).toMatch(new RegExp(`${waiting}: HELD, waiting for operators \\(1 of 2 releases under rule "large-refunds"\\)`))
    expect(run.stdout).toMatch(/below quorum: 1 of 2 distinct operators/)
    expect(run.stdout).toMatch(/clean: nothing left in flight; 1 HELD effect waiting for operators' releases/)
    expect(applied(stranded)).toBe(1)
    expect(applied(denied) + applied(waiting)).toBe(0)
    await s.withStore(async (store) => {
      expect((await store.get(stranded))!.state).toBe('COMMITTED')
      expect((await store.get(denied))!.state).toBe('REJECTED')
      expect((await store.get(waiting))!.state).toBe('HELD')
    })

    const again = await interlock(['reconcile-effects', '--older-than', '1ms', '--json'], { cwd: s.cwd, env: s.env })
    expect(again.code, again.stderr).toBe(0)
    expect(JSON.parse(again.stdout).report.effects).toMatchObject([{ effectId: waiting, plan: 'wait', quorum: { have: 1, need: 2 } }])
    expect(applied(stranded)).toBe(1)

    const verify = await interlock(['outbox', 'verify'], { cwd: s.cwd, env: s.env })
    expect(verify.code, verify.stderr).toBe(0)
  })
})
