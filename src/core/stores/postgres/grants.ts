/**
 * The database roles of a shared PostgreSQL store and their exact grants, as
 * SQL a DBA reviews and runs (`interlock install --print-grants`).
 * docs/dbas.md, "Database roles and grants", says who each role is; docs/design.md, "The
 * trust boundary", says why:
 *
 * - installer: owns the schema and everything `interlock install` creates in
 *   it. Its script runs before the first install: the schema, owned by it.
 * - agent: proposes effects and reads its own (propose(), own_effects,
 *   own_records: schemas/postgres/0001_baseline.sql), and keeps what its
 *   callers read (remember_read(), own_thread_reads: 0006_callers.sql).
 *   No table at all.
 * - relay (and `reconcile-effects`): claims, leases, heartbeats, and moves
 *   effects it holds; never creates one, never rewrites what an effect is.
 *   Stores checkpoints it signs (`outbox checkpoint`).
 * - operator: releases, denials, resolutions, compensations (a compensation
 *   is a new effect), checkpoints, and everything read-only does; and what an
 *   agent keeps of its callers' reads, for an inline `mcp-proxy` run as it.
 * - read-only: status, list, show, verify, export.
 * - pruner (`outbox prune`): what read-only may, and deleting settled
 *   history under a checkpoint: records and effects rows, a checkpoint and
 *   the journals' new starts (schemas/postgres/0002_retention.sql).
 *
 * Every other script runs after `install` (and again after each upgrade: it
 * is idempotent). It first takes every privilege in the schema away from
 * PUBLIC and from each role it names, then grants each exactly its own, in
 * one transaction. Names are validated and quoted; nothing else is interpolated.
 *
 * A migration that adds a table, view, sequence or function adds its grants
 * here: test/e2e/roles.test.ts fails on an object of the schema these
 * scripts do not name.
 */
import { UsageError } from '../../errors.js'
import { SQL_IDENTIFIER, quoteIdentifier, quoteSchema } from './identifier.js'

export const GRANT_ROLES = ['agent', 'relay', 'operator', 'readOnly', 'pruner'] as const
export type GrantRole = (typeof GRANT_ROLES)[number]

/** Role names per kind of role; each list may name several roles (e.g. one agent role per agent). */
export type RoleNames = Partial<Record<GrantRole, readonly string[]>>

const RESERVED = new Set(['public', 'none', 'current_user', 'current_role', 'session_user'])

/** Columns a relay or an operator may change on an effect: its state and what goes with it; never what the effect is. */
const EFFECT_STEP_COLUMNS = ['state', 'last_seq', 'detail', 'updated_at']
const LEASE_COLUMNS = ['lease_relay', 'lease_token', 'lease_expires']
/** What a proposal through append() writes; proposed_by is left to its default (the database role that writes). */
const EFFECT_INSERT_COLUMNS = ['id', 'journal', 'thread', 'target', 'action', 'tier', 'effect', 'state', 'last_seq', 'detail', 'created_at', 'updated_at']
const HEAD_COLUMNS = ['head_seq', 'head_hash']
const READABLE = ['schema_migrations', 'effects', 'journal_records', 'journals', 'relays', 'checkpoints', 'journal_bases', 'thread_reads', 'seals']
const APPEND_FUNCTIONS = ['append', 'append_chain', 'append_chains', 'append_each', 'append_step']
const AGENT_READS = ['schema_migrations', 'own_effects', 'own_records', 'own_thread_reads']
/** What the MCP gateway keeps of its callers' reads, per database role (0006_callers.sql). */
const READ_KEEPING = 'remember_read'

const WHAT: Record<GrantRole, string> = {
  agent: 'proposes effects and reads its own (propose(), own_effects, own_records), keeps its callers\' reads (remember_read(), own_thread_reads); no table, no other function',
  relay: 'claims, leases and moves the effects it holds, heartbeats, checkpoints; `interlock relay`, `interlock reconcile-effects` and `interlock outbox checkpoint`',
  operator: 'releases, denials, resolutions, compensations and checkpoints (`interlock outbox ...`), every read, and its callers\' reads (an inline `interlock mcp-proxy`)',
  readOnly: '`interlock outbox status | list | show | verify | export`',
  pruner: '`interlock outbox prune`: deletes settled history under a checkpoint, and every read',
}

const LABEL: Record<GrantRole, string> = { agent: 'agent', relay: 'relay', operator: 'operator', readOnly: 'read-only', pruner: 'pruner' }

/** A role name as written into SQL: the same rule as schema names, and none of PostgreSQL's reserved names. */
export function quoteRole(name: string, flag: string): string {
  if (!SQL_IDENTIFIER.test(name) || RESERVED.has(name) || name.startsWith('pg_')) {
    throw new UsageError(`${flag} ${JSON.stringify(name)} is not a role name Interlock can grant to`, {
      hint: 'Use a lowercase name of letters, digits and _ (at most 63, starting with a letter or _), not PUBLIC, not pg_…; create the role first (CREATE ROLE).',
    })
  }
  return quoteIdentifier(name)
}

/** What to run, as a superuser or the database's owner, before the first `interlock install` by `installer`. */
export function installerSql(schema: string, installer: string): string {
  const s = quoteSchema(schema)
  const r = quoteRole(installer, '--installer')
  return [
    `-- Interlock installer role ${r} for schema ${s}.`,
    '-- Run once, before the first `interlock install`, as a superuser or the database\'s owner.',
    '-- The role must exist (CREATE ROLE ' + r + " LOGIN PASSWORD '…';) and should not be a superuser:",
    '-- the schema\'s propose() function runs with its owner\'s rights. Owning the schema, it needs no',
    '-- other right (not CREATE on the database). Then, as this role: interlock install, and',
    '-- interlock install --print-grants --agent … --relay … --operator … --read-only … for the others.',
    `CREATE SCHEMA ${s} AUTHORIZATION ${r};`,
    '',
  ].join('\n')
}

/** The grants of every role named, for a schema installed at `version`. */
export function grantsSql(schema: string, roles: RoleNames, version: number): string {
  const s = quoteSchema(schema)
  const named = GRANT_ROLES.flatMap((kind) => (roles[kind] ?? []).map((name) => ({ kind, name, q: quoteRole(name, `--${LABEL[kind]}`) })))
  if (named.length === 0) throw new UsageError('name at least one role to grant to', { hint: 'e.g. --agent interlock_agent --relay interlock_relay' })
  const seen = new Map<string, GrantRole>()
  for (const n of named) {
    const before = seen.get(n.name)
    if (before) throw new UsageError(`role ${JSON.stringify(n.name)} is named twice (--${LABEL[before]} and --${LABEL[n.kind]})`, { hint: 'One role, one job: give each its own role.' })
    seen.set(n.name, n.kind)
  }
  const t = (name: string) => `${s}.${name}`
  const lines = [
    `-- Interlock database roles for schema ${s} (schema version ${version}).`,
    '-- Run after `interlock install`, and again after every upgrade (it is idempotent), as the',
    '-- installer role (the schema\'s owner) or a superuser:  psql -v ON_ERROR_STOP=1 -f grants.sql',
    "-- The roles must exist (CREATE ROLE name LOGIN PASSWORD '…'; or NOLOGIN roles granted to login roles).",
    '-- Each role named here loses every privilege it had in the schema, then gets exactly its own.',
    'BEGIN;',
    '',
    '-- The schema is installed, at the version these grants are for.',
    'DO $$ BEGIN',
    `  IF to_regclass('${s}.schema_migrations') IS NULL THEN`,
    `    RAISE EXCEPTION 'schema ${s} is not installed: run interlock install first';`,
    '  END IF;',
    `  IF (SELECT max(version) FROM ${t('schema_migrations')}) <> ${version} THEN`,
    `    RAISE EXCEPTION 'schema ${s} is not at version ${version}: run this interlock''s install first, or print the grants with the interlock that installed it';`,
    '  END IF;',
    'END $$;',
    '',
    '-- Nobody else: functions are executable by PUBLIC unless revoked.',
    `REVOKE ALL ON SCHEMA ${s} FROM PUBLIC;`,
    `REVOKE ALL ON ALL TABLES IN SCHEMA ${s} FROM PUBLIC;`,
    `REVOKE ALL ON ALL SEQUENCES IN SCHEMA ${s} FROM PUBLIC;`,
    `REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ${s} FROM PUBLIC;`,
  ]
  for (const n of named) {
    lines.push('', `-- ${LABEL[n.kind]} ${n.q}: ${WHAT[n.kind]}.`)
    lines.push(
      `REVOKE ALL ON SCHEMA ${s} FROM ${n.q};`,
      `REVOKE ALL ON ALL TABLES IN SCHEMA ${s} FROM ${n.q};`,
      `REVOKE ALL ON ALL SEQUENCES IN SCHEMA ${s} FROM ${n.q};`,
      `REVOKE ALL ON ALL FUNCTIONS IN SCHEMA ${s} FROM ${n.q};`,
      `GRANT USAGE ON SCHEMA ${s} TO ${n.q};`,
      ...grantsOf(n.kind, t, n.q),
    )
    if (n.kind === 'agent') lines.push(...onlyGuard(s, n.name, 'an agent', AGENT_READS, ['propose', READ_KEEPING]))
    if (n.kind === 'readOnly') lines.push(...onlyGuard(s, n.name, 'a read-only role', READABLE, []))
  }
  lines.push('', 'COMMIT;', '')
  return lines.join('\n')
}

function grantsOf(kind: GrantRole, t: (name: string) => string, q: string): string[] {
  const cols = (c: readonly string[]) => `(${c.join(', ')})`
  switch (kind) {
    case 'agent':
      return [
        `GRANT SELECT ON ${AGENT_READS.map(t).join(', ')} TO ${q};`,
        `GRANT EXECUTE ON FUNCTION ${t('propose')}, ${t(READ_KEEPING)} TO ${q};`,
      ]
    case 'relay':
      return [
        `GRANT SELECT ON ${READABLE.map(t).join(', ')} TO ${q};`,
        `GRANT INSERT ON ${t('journal_records')} TO ${q};`,
        `GRANT UPDATE ${cols(HEAD_COLUMNS)} ON ${t('journals')} TO ${q};`,
        `GRANT UPDATE ${cols([...EFFECT_STEP_COLUMNS, ...LEASE_COLUMNS])} ON ${t('effects')} TO ${q};`,
        // DELETE: a relay's heartbeat forgets the rows of relays gone longer than [relay] heartbeat_retention.
        `GRANT INSERT, UPDATE (info, last_seen), DELETE ON ${t('relays')} TO ${q};`,
        `GRANT USAGE ON SEQUENCE ${t('lease_tokens')} TO ${q};`,
        `GRANT EXECUTE ON FUNCTION ${[...APPEND_FUNCTIONS, 'claim'].map(t).join(', ')} TO ${q};`,
        // Its seals, in the transaction of the records they cover (crypto/seal.ts).
        `GRANT INSERT ON ${t('seals')} TO ${q};`,
        `GRANT USAGE ON SEQUENCE ${t('seals_id_seq')} TO ${q};`,
        // `outbox checkpoint` signed with the relay key (a checkpoint removes nothing; verify judges its signature).
        `GRANT INSERT ON ${t('checkpoints')} TO ${q};`,
      ]
    case 'operator':
      return [
        `GRANT SELECT ON ${READABLE.map(t).join(', ')} TO ${q};`,
        `GRANT INSERT ON ${t('journal_records')} TO ${q};`,
        `GRANT INSERT ${cols(['journal', ...HEAD_COLUMNS])}, UPDATE ${cols(HEAD_COLUMNS)} ON ${t('journals')} TO ${q};`,
        `GRANT INSERT ${cols(EFFECT_INSERT_COLUMNS)}, UPDATE ${cols(EFFECT_STEP_COLUMNS)} ON ${t('effects')} TO ${q};`,
        `GRANT EXECUTE ON FUNCTION ${APPEND_FUNCTIONS.map(t).join(', ')}, ${t(READ_KEEPING)} TO ${q};`,
        `GRANT SELECT ON ${t('own_thread_reads')} TO ${q};`,
        `GRANT INSERT ON ${t('checkpoints')} TO ${q};`,
        `GRANT INSERT ON ${t('seals')} TO ${q};`,
        `GRANT USAGE ON SEQUENCE ${t('seals_id_seq')} TO ${q};`,
      ]
    case 'readOnly':
      return [`GRANT SELECT ON ${READABLE.map(t).join(', ')} TO ${q};`]
    case 'pruner':
      return [
        `GRANT SELECT ON ${READABLE.map(t).join(', ')} TO ${q};`,
        `GRANT DELETE ON ${t('journal_records')}, ${t('effects')} TO ${q};`,
        `GRANT INSERT ON ${t('checkpoints')} TO ${q};`,
        `GRANT INSERT, UPDATE ON ${t('journal_bases')} TO ${q};`,
      ]
  }
}

/**
 * Checked by the database once the grants are in place: a role that must not
 * write (an agent, a read-only role) holds, through any membership, no other
 * privilege in the schema than its own: not as a superuser, not as the owner
 * or a member of it, not through another role with rights there.
 */
function onlyGuard(s: string, role: string, label: string, selects: readonly string[], functions: readonly string[]): string[] {
  // Names are SQL_IDENTIFIER-checked (lowercase letters, digits, _): safe inside a literal.
  const notIn = (column: string, xs: readonly string[]) => (xs.length ? `${column} NOT IN (${xs.map((x) => `'${x}'`).join(', ')}) AND ` : '')
  const refuse = (what: string) =>
    `RAISE EXCEPTION 'role "${role}" ${what}: ${label} holds nothing else in schema ${s} (is it a superuser, the owner, or a member of a role with rights there?)'`
  return [
    'DO $$',
    'DECLARE o record;',
    'BEGIN',
    `  IF has_schema_privilege('${role}', to_regnamespace('${s}'), 'CREATE') THEN`,
    `    ${refuse('can create objects in it')};`,
    '  END IF;',
    `  FOR o IN SELECT c.oid, c.relname, c.relkind FROM pg_class c WHERE c.relnamespace = to_regnamespace('${s}') AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') LOOP`,
    `    IF o.relkind = 'S' AND has_sequence_privilege('${role}', o.oid, 'USAGE, SELECT, UPDATE') THEN`,
    `      ${refuse("can use sequence %")}, o.relname;`,
    `    ELSIF o.relkind <> 'S' AND (has_table_privilege('${role}', o.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')`,
    `        OR has_any_column_privilege('${role}', o.oid, 'INSERT, UPDATE, REFERENCES')) THEN`,
    `      ${refuse('can write to %')}, o.relname;`,
    `    ELSIF o.relkind <> 'S' AND ${notIn('o.relname', selects)}has_any_column_privilege('${role}', o.oid, 'SELECT') THEN`,
    `      ${refuse('can read %')}, o.relname;`,
    '    END IF;',
    '  END LOOP;',
    `  FOR o IN SELECT p.oid, p.proname FROM pg_proc p WHERE p.pronamespace = to_regnamespace('${s}') LOOP`,
    `    IF ${notIn('o.proname', functions)}has_function_privilege('${role}', o.oid, 'EXECUTE') THEN`,
    `      ${refuse('can execute function %')}, o.proname;`,
    '    END IF;',
    '  END LOOP;',
    'END $$;',
  ]
}
