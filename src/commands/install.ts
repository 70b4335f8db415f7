import { Flags } from '@oclif/core'
import { BaseCommand } from '../cli/base-command.js'
import { durationFlag } from '../cli/duration.js'
import { UsageError } from '../core/errors.js'
import { fileName, latestVersion } from '../core/stores/migrations.js'
import { install, installSql, type InstallReport, type LockWait, type MigrationInfo, type PendingMigration, type StoreKind } from '../core/stores/migrate.js'
import { describeHolder, LOCK_RETRIES, LOCK_TIMEOUT_MS } from '../core/stores/postgres/migrator.js'
import { grantsSql, installerSql, type RoleNames } from '../core/stores/postgres/grants.js'

/** `--print-sql`'s result: the script, for review or to run by hand. */
export interface InstallSqlResult {
  kind: StoreKind
  sql: string
}

/** `--print-grants`' result: the GRANT script for the roles named. */
export interface InstallGrantsResult {
  kind: 'postgres'
  schema: string
  roles: RoleNames & { installer?: string }
  sql: string
}

const ROLE_FLAG = (job: string) =>
  Flags.string({ multiple: true, helpValue: '<role>', dependsOn: ['print-grants'], exclusive: ['installer'], description: `With --print-grants: a database role that ${job} (repeatable).` })

export default class Install extends BaseCommand<typeof Install> {
  static override summary = 'Create or upgrade the store schema.'
  static override description = `Applies the schema migrations this interlock ships to the store in interlock.toml ([store]). Idempotent: a run with nothing pending writes nothing, so any role that can read the schema may run it. Safe to run twice at once (cron, a deploy and a DBA): PostgreSQL takes an advisory lock for the run, SQLite a write lock.

PostgreSQL, beside running relays: each migration runs in its own transaction, and waits at most --lock-timeout for each lock, then gives up (so a migration queued behind a long reader such as pg_dump holds relays up at most that long) and tries again after a pause, --lock-retries times; indexes are built with CREATE INDEX CONCURRENTLY, which holds up no read or write.

Refuses (exit 4) a store whose schema is newer than this interlock, whose applied migration differs from the one shipped, or that was installed by a development build before the first release; and, when something is pending, a role that does not own the schema.

--print-sql prints the whole install as SQL for review (or to run by hand with psql -f); --dry-run connects and reports what would be applied and what each pending migration locks, changing nothing, and refuses what the real run would refuse.

--print-grants prints, for a PostgreSQL store, the SQL that gives each named database role exactly its job's rights in the schema, and connects to nothing: --agent (only proposes effects and reads its own: pair it with [store] access = "agent"), --relay, --operator, --read-only, --pruner. Run it after install, and again after each upgrade, as the installer. --installer <role> prints instead what a superuser runs before the first install: the schema, owned by that role.`
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --dry-run',
    '<%= config.bin %> <%= command.id %> --print-sql > interlock-install.sql',
    '<%= config.bin %> <%= command.id %> --config deploy/interlock.toml --json',
    '<%= config.bin %> <%= command.id %> --print-grants --installer interlock_installer > before-install.sql',
    '<%= config.bin %> <%= command.id %> --print-grants --agent interlock_agent --relay interlock_relay --operator interlock_operator --read-only interlock_auditor > grants.sql',
  ]

  static override flags = {
    'print-sql': Flags.boolean({ description: 'Print the SQL of the whole install and exit; connects to nothing.', exclusive: ['dry-run', 'print-grants'] }),
    'dry-run': Flags.boolean({ description: 'Report what would be applied and what each migration locks; change nothing.', exclusive: ['print-grants'] }),
    'lock-timeout': Flags.string({
      helpValue: '<duration>',
      exclusive: ['print-grants', 'print-sql'],
      description: `PostgreSQL: how long one attempt at a migration waits for a lock before it gives up and retries (e.g. 500ms, 3s). Default ${LOCK_TIMEOUT_MS / 1000}s.`,
    }),
    'lock-retries': Flags.integer({
      min: 0,
      exclusive: ['print-grants', 'print-sql'],
      description: `PostgreSQL: attempts after the first when a lock was not had in time (1 s apart, doubling up to 30 s). Default ${LOCK_RETRIES}.`,
    }),
    'print-grants': Flags.boolean({ description: "Print the GRANT script of the roles named by the flags below and exit (PostgreSQL); connects to nothing." }),
    agent: ROLE_FLAG('only proposes effects and reads its own'),
    relay: ROLE_FLAG('runs `interlock relay` and `reconcile-effects`, and may store checkpoints'),
    operator: ROLE_FLAG('releases, resolves, compensates and checkpoints, and reads everything'),
    'read-only': ROLE_FLAG('reads everything: status, list, show, verify, export'),
    pruner: ROLE_FLAG('runs `outbox prune`: deletes settled history under a checkpoint, and reads everything'),
    installer: Flags.string({
      helpValue: '<role>',
      dependsOn: ['print-grants'],
      description: 'With --print-grants: print instead what to run before the first install, so this role owns the schema.',
    }),
  }

  async run(): Promise<InstallReport | InstallSqlResult | InstallGrantsResult> {
    const { store } = await this.interlockConfig()
    if (this.flags['print-grants']) {
      if (store.kind !== 'postgres') {
        throw new UsageError('--print-grants is for a PostgreSQL store; this config\'s store is SQLite, which has no database roles', {
          hint: 'Set [store] kind = "postgres" (and url) in interlock.toml, or use --config with the shared store\'s config.',
        })
      }
      const f = this.flags
      const roles: RoleNames = { agent: f.agent, relay: f.relay, operator: f.operator, readOnly: f['read-only'], pruner: f.pruner }
      const sql = f.installer ? installerSql(store.schema, f.installer) : grantsSql(store.schema, roles, latestVersion('postgres'))
      if (!this.jsonEnabled()) this.log(sql.trimEnd())
      return { kind: 'postgres', schema: store.schema, roles: f.installer ? { installer: f.installer } : roles, sql }
    }
    if (this.flags['print-sql']) {
      const sql = installSql(store.kind, store.kind === 'postgres' ? store.schema : undefined)
      if (!this.jsonEnabled()) this.log(sql.trimEnd())
      return { kind: store.kind, sql }
    }
    const report = await install(store, {
      dryRun: this.flags['dry-run'],
      lockTimeoutMs: this.lockTimeout(),
      lockRetries: this.flags['lock-retries'],
      onLockWait: (w) => this.lockWait(w),
    })
    if (!this.jsonEnabled()) this.summary(report)
    return report
  }

  private lockTimeout(): number | undefined {
    const given = this.flags['lock-timeout']
    return given === undefined ? undefined : durationFlag('lock-timeout', given)
  }

  /** On stderr, also under --json: a DBA watching the run sees why it waits. */
  private lockWait(w: LockWait): void {
    const who = w.holders.length ? w.holders.map(describeHolder).join('; ') : 'another session'
    process.stderr.write(`${w.migration}: a lock was not free in time (${who}); attempt ${w.attempt + 1} in ${Math.round(w.retryInMs / 1000)} s\n`)
  }

  private summary(r: InstallReport): void {
    const names = (ms: MigrationInfo[]) => ms.map(fileName).join(', ')
    this.log(`Store: ${r.location}`)
    if (r.dryRun) {
      this.log(`Schema version ${r.currentVersion}; this interlock installs ${r.targetVersion}.`)
      if (r.pending.length) {
        this.log(`Would apply: ${names(r.pending)}`)
        for (const m of r.pending) this.log(locksOf(m))
      } else this.log('Nothing to apply: the schema is up to date.')
      this.log('Dry run: nothing was changed.')
    } else if (r.applied.length) {
      this.log(`Applied: ${names(r.applied)}`)
      this.log(`Schema version ${r.currentVersion} → ${r.targetVersion}.`)
    } else {
      this.log(`Schema version ${r.currentVersion} is up to date; nothing to apply.`)
    }
  }
}

/** "0002_x.sql (outside a transaction): effects SHARE UPDATE EXCLUSIVE: reads and writes go on" */
function locksOf(m: PendingMigration): string {
  const how = m.transaction ? '' : ' (one statement at a time, outside a transaction)'
  const locks = m.locks.map((l) => (l.mode === 'none' ? `  locks: nothing that exists (${l.note})` : `  locks: ${l.relation} ${l.mode}: ${l.note}`))
  return [`${fileName(m)}${how}`, ...locks].join('\n')
}
