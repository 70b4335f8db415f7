/**
 * The GRANT scripts `interlock install --print-grants` prints: names checked
 * and quoted, each role's grants exactly its own. That the database enforces
 * them is test/e2e/roles.test.ts's job.
 */
import { describe, expect, it } from 'vitest'
import { ConfigError, UsageError } from '../../src/core/errors.js'
import { grantsSql, installerSql } from '../../src/core/stores/postgres/grants.js'

/** The GRANT statements of one role, in order. */
function grantsTo(sql: string, role: string): string[] {
  return sql.split('\n').filter((l) => l.startsWith('GRANT ') && l.endsWith(` TO "${role}";`))
}

describe('grantsSql', () => {
  const sql = grantsSql('ops', { agent: ['bot_a', 'bot_b'], relay: ['relay'], operator: ['ops_team'], readOnly: ['auditor'], pruner: ['janitor'] }, 12)

  it('gives the agent the schema, the schema version, propose(), remember_read() and the views of its own effects and reads: nothing else', () => {
    expect(grantsTo(sql, 'bot_a')).toEqual([
      'GRANT USAGE ON SCHEMA "ops" TO "bot_a";',
      'GRANT SELECT ON "ops".schema_migrations, "ops".own_effects, "ops".own_records, "ops".own_thread_reads TO "bot_a";',
      'GRANT EXECUTE ON FUNCTION "ops".propose, "ops".remember_read TO "bot_a";',
    ])
    expect(grantsTo(sql, 'bot_b')).toEqual(grantsTo(sql, 'bot_a').map((l) => l.replace('bot_a', 'bot_b')))
  })

  it('gives the relay its column-wise writes, the lease sequence and the append and claim functions; never INSERT on effects or journals', () => {
    expect(grantsTo(sql, 'relay')).toEqual([
      'GRANT USAGE ON SCHEMA "ops" TO "relay";',
      'GRANT SELECT ON "ops".schema_migrations, "ops".effects, "ops".journal_records, "ops".journals, "ops".relays, "ops".checkpoints, "ops".journal_bases, "ops".thread_reads, "ops".seals TO "relay";',
      'GRANT INSERT ON "ops".journal_records TO "relay";',
      'GRANT UPDATE (head_seq, head_hash) ON "ops".journals TO "relay";',
      'GRANT UPDATE (state, last_seq, detail, updated_at, lease_relay, lease_token, lease_expires) ON "ops".effects TO "relay";',
      'GRANT INSERT, UPDATE (info, last_seen), DELETE ON "ops".relays TO "relay";',
      'GRANT USAGE ON SEQUENCE "ops".lease_tokens TO "relay";',
      'GRANT EXECUTE ON FUNCTION "ops".append, "ops".append_chain, "ops".append_chains, "ops".append_each, "ops".append_step, "ops".claim TO "relay";',
      'GRANT INSERT ON "ops".seals TO "relay";',
      'GRANT USAGE ON SEQUENCE "ops".seals_id_seq TO "relay";',
      'GRANT INSERT ON "ops".checkpoints TO "relay";',
    ])
  })

  it('gives the operator appends and new effects (compensations) and its callers\' reads (an inline mcp-proxy), but no lease, no heartbeat, and never proposed_by or started_by', () => {
    const operator = grantsTo(sql, 'ops_team')
    expect(operator).toEqual([
      'GRANT USAGE ON SCHEMA "ops" TO "ops_team";',
      'GRANT SELECT ON "ops".schema_migrations, "ops".effects, "ops".journal_records, "ops".journals, "ops".relays, "ops".checkpoints, "ops".journal_bases, "ops".thread_reads, "ops".seals TO "ops_team";',
      'GRANT INSERT ON "ops".journal_records TO "ops_team";',
      'GRANT INSERT (journal, head_seq, head_hash), UPDATE (head_seq, head_hash) ON "ops".journals TO "ops_team";',
      'GRANT INSERT (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at), UPDATE (state, last_seq, detail, updated_at) ON "ops".effects TO "ops_team";',
      'GRANT EXECUTE ON FUNCTION "ops".append, "ops".append_chain, "ops".append_chains, "ops".append_each, "ops".append_step, "ops".remember_read TO "ops_team";',
      'GRANT SELECT ON "ops".own_thread_reads TO "ops_team";',
      'GRANT INSERT ON "ops".checkpoints TO "ops_team";',
      'GRANT INSERT ON "ops".seals TO "ops_team";',
      'GRANT USAGE ON SEQUENCE "ops".seals_id_seq TO "ops_team";',
    ])
    expect(operator.join('\n')).not.toMatch(/lease|claim|proposed_by|started_by|propose\b/)
  })

  it('gives the read-only role SELECT on the tables, and checks it holds no more', () => {
    expect(grantsTo(sql, 'auditor')).toEqual([
      'GRANT USAGE ON SCHEMA "ops" TO "auditor";',
      'GRANT SELECT ON "ops".schema_migrations, "ops".effects, "ops".journal_records, "ops".journals, "ops".relays, "ops".checkpoints, "ops".journal_bases, "ops".thread_reads, "ops".seals TO "auditor";',
    ])
  })

  it('gives the pruner every read, and deletes of records and effects rows under a checkpoint: no update of either, no append, no lease', () => {
    const pruner = grantsTo(sql, 'janitor')
    expect(pruner).toEqual([
      'GRANT USAGE ON SCHEMA "ops" TO "janitor";',
      'GRANT SELECT ON "ops".schema_migrations, "ops".effects, "ops".journal_records, "ops".journals, "ops".relays, "ops".checkpoints, "ops".journal_bases, "ops".thread_reads, "ops".seals TO "janitor";',
      'GRANT DELETE ON "ops".journal_records, "ops".effects TO "janitor";',
      'GRANT INSERT ON "ops".checkpoints TO "janitor";',
      'GRANT INSERT, UPDATE ON "ops".journal_bases TO "janitor";',
    ])
    expect(pruner.join('\n')).not.toMatch(/lease|claim|append|propose|UPDATE[^;]*(effects|journal_records)/)
  })

  it('strips every named role (and PUBLIC) of what it had in the schema first, in one transaction, after checking the schema version', () => {
    const lines = sql.split('\n')
    expect(lines.filter((l) => !l.startsWith('--')).find((l) => l.trim() !== '')).toBe('BEGIN;')
    expect(lines.at(-2)).toBe('COMMIT;')
    expect(sql).toContain(`IF (SELECT max(version) FROM "ops".schema_migrations) <> 12 THEN`)
    for (const who of ['PUBLIC', '"bot_a"', '"relay"', '"ops_team"', '"auditor"']) {
      for (const what of ['SCHEMA "ops"', 'ALL TABLES IN SCHEMA "ops"', 'ALL SEQUENCES IN SCHEMA "ops"', 'ALL FUNCTIONS IN SCHEMA "ops"']) {
        const revoke = lines.indexOf(`REVOKE ALL ON ${what} FROM ${who};`)
        expect(revoke, `${what} from ${who}`).toBeGreaterThan(0)
        const firstGrant = who === 'PUBLIC' ? lines.length : lines.findIndex((l) => l.startsWith('GRANT ') && l.endsWith(` TO ${who};`))
        expect(revoke).toBeLessThan(firstGrant)
      }
    }
    // The guard that asks the database what an agent or a read-only role really holds.
    expect(sql.match(/has_table_privilege\('bot_a'/g)).toHaveLength(1)
    expect(sql.match(/has_table_privilege\('auditor'/g)).toHaveLength(1)
    expect(sql).not.toMatch(/has_table_privilege\('relay'/)
  })

  it('refuses names that are not plain role names, reserved ones, one role named twice, and no role at all', () => {
    for (const bad of ['Agent', 'a"; DROP TABLE x; --', 'public', 'pg_monitor', 'current_user', 'a-b', '', 'x'.repeat(64)]) {
      expect(() => grantsSql('ops', { agent: [bad] }, 12), bad).toThrow(UsageError)
    }
    expect(() => grantsSql('ops', { agent: ['same'], relay: ['same'] }, 12)).toThrow(/named twice \(--agent and --relay\)/)
    expect(() => grantsSql('ops', {}, 12)).toThrow(/name at least one role/)
    expect(() => grantsSql('x"; --', { agent: ['a'] }, 12)).toThrow(ConfigError)
  })
})

describe('installerSql', () => {
  it('creates the schema owned by the installer, with no IF NOT EXISTS to hide a schema someone else owns', () => {
    const sql = installerSql('ops', 'deployer')
    expect(sql.split('\n').filter((l) => l && !l.startsWith('--'))).toEqual(['CREATE SCHEMA "ops" AUTHORIZATION "deployer";'])
    expect(() => installerSql('ops', 'PUBLIC')).toThrow(UsageError)
  })
})
