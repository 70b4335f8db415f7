import { Flags } from '@oclif/core'
import { BaseCommand } from '../cli/base-command.js'
import { UsageError } from '../core/errors.js'
import { fileName, latestVersion } from '../core/stores/migrations.js'
import { install, installSql, type InstallReport, type MigrationInfo, type StoreKind } from '../core/stores/migrate.js'
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
  static override description = `Applies the schema migrations this interlock ships to the store in interlock.toml ([store]), each in the one transaction of the run. Idempotent: a second run applies nothing. Safe to run twice at once (cron, a deploy and a DBA): PostgreSQL takes an advisory lock for the whole run, SQLite a write lock.

Refuses (exit 4) a store whose schema is newer than this interlock, or whose applied migration differs from the one shipped.

--print-sql prints the whole install as one SQL script for review (or to run by hand with psql); --dry-run connects and reports what would be applied, changing nothing.

--print-grants prints, for a PostgreSQL store, the SQL that gives each named database role exactly its job's rights in the schema, and connects to nothing: --agent (only proposes effects and reads its own: pair it with [store] access = "agent"), --relay, --operator, --read-only. Run it after install, and again after each upgrade, as the installer. --installer <role> prints instead what a superuser runs before the first install: the schema, owned by that role.`
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
    'dry-run': Flags.boolean({ description: 'Report what would be applied; change nothing.', exclusive: ['print-grants'] }),
    'print-grants': Flags.boolean({ description: "Print the GRANT script of the roles named by the flags below and exit (PostgreSQL); connects to nothing." }),
    agent: ROLE_FLAG('only proposes effects and reads its own'),
    relay: ROLE_FLAG('runs `interlock relay` and `reconcile-effects`'),
    operator: ROLE_FLAG('releases, resolves and compensates, and reads everything'),
    'read-only': ROLE_FLAG('reads everything: status, list, show, verify, export'),
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
      const roles: RoleNames = { agent: f.agent, relay: f.relay, operator: f.operator, readOnly: f['read-only'] }
      const sql = f.installer ? installerSql(store.schema, f.installer) : grantsSql(store.schema, roles, latestVersion('postgres'))
      if (!this.jsonEnabled()) this.log(sql.trimEnd())
      return { kind: 'postgres', schema: store.schema, roles: f.installer ? { installer: f.installer } : roles, sql }
    }
    if (this.flags['print-sql']) {
      const sql = installSql(store.kind, store.kind === 'postgres' ? store.schema : undefined)
      if (!this.jsonEnabled()) this.log(sql.trimEnd())
      return { kind: store.kind, sql }
    }
    const report = await install(store, { dryRun: this.flags['dry-run'] })
    if (!this.jsonEnabled()) this.summary(report)
    return report
  }

  private summary(r: InstallReport): void {
    const names = (ms: MigrationInfo[]) => ms.map(fileName).join(', ')
    this.log(`Store: ${r.location}`)
    if (r.dryRun) {
      this.log(`Schema version ${r.currentVersion}; this interlock installs ${r.targetVersion}.`)
      this.log(r.pending.length ? `Would apply: ${names(r.pending)}` : 'Nothing to apply: the schema is up to date.')
      this.log('Dry run: nothing was changed.')
    } else if (r.applied.length) {
      this.log(`Applied: ${names(r.applied)}`)
      this.log(`Schema version ${r.currentVersion} → ${r.targetVersion}.`)
    } else {
      this.log(`Schema version ${r.currentVersion} is up to date; nothing to apply.`)
    }
  }
}
