import { Flags } from '@oclif/core'
import { BaseCommand } from '../cli/base-command.js'
import { fileName } from '../core/stores/migrations.js'
import { install, installSql, type InstallReport, type MigrationInfo, type StoreKind } from '../core/stores/migrate.js'

/** `--print-sql`'s result: the script, for review or to run by hand. */
export interface InstallSqlResult {
  kind: StoreKind
  sql: string
}

export default class Install extends BaseCommand<typeof Install> {
  static override summary = 'Create or upgrade the store schema.'
  static override description = `Applies the schema migrations this interlock ships to the store in interlock.toml ([store]), each in the one transaction of the run. Idempotent: a second run applies nothing. Safe to run twice at once (cron, a deploy and a DBA): PostgreSQL takes an advisory lock for the whole run, SQLite a write lock.

Refuses (exit 4) a store whose schema is newer than this interlock, or whose applied migration differs from the one shipped.

--print-sql prints the whole install as one SQL script for review (or to run by hand with psql); --dry-run connects and reports what would be applied, changing nothing.`
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --dry-run',
    '<%= config.bin %> <%= command.id %> --print-sql > interlock-install.sql',
    '<%= config.bin %> <%= command.id %> --config deploy/interlock.toml --json',
  ]

  static override flags = {
    'print-sql': Flags.boolean({ description: 'Print the SQL of the whole install and exit; connects to nothing.', exclusive: ['dry-run'] }),
    'dry-run': Flags.boolean({ description: 'Report what would be applied; change nothing.' }),
  }

  async run(): Promise<InstallReport | InstallSqlResult> {
    const { store } = await this.interlockConfig()
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
