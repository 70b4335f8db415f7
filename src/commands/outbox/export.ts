import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { writeToStdout } from '../../cli/stdout-stream.js'
import { systemClock } from '../../core/clock.js'
import { UsageError } from '../../core/errors.js'
import { exportJournal, exportJournalTo } from '../../core/outbox/export-file.js'

export default class OutboxExport extends BaseCommand<typeof OutboxExport> {
  static override needsAllTargets = false
  static override allowDefaultConfig = true
  static override summary = 'Write every journal to a file that `outbox verify --file` checks offline.'
  static override description = `JSON Lines: a header, every journal record exactly as stored (hash-chained, signatures included), and an end line with where every effect's records end, so a file cut short is detected. Never overwrites a file. \`--out -\` writes to stdout instead (the summary then goes to stderr), complete whatever its size, e.g. to compress or ship it. With no config file, it reads the embedded default (the SQLite journal ./interlock.db).

Exit codes: 0 written; 1 the file exists or cannot be written; 2 --out - with --json; 3 config invalid; 4 store unreachable.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --out journal-2026-01.jsonl',
    '<%= config.bin %> <%= command.id %> --out audit.jsonl --json',
    '<%= config.bin %> <%= command.id %> --out - | gzip > journal-2026-01.jsonl.gz',
  ]
  static override flags = { out: Flags.string({ required: true, helpValue: '<file>', description: 'File to write (must not exist), or - for stdout.' }) }

  async run(): Promise<{ path: string; records: number; effects: number }> {
    const toStdout = this.flags.out === '-'
    if (toStdout && this.jsonEnabled()) {
      throw new UsageError('--out - and --json would both write to stdout', { hint: 'Write the export to a file with --out <file>, or drop --json.' })
    }
    const interlock = await this.openInterlock()
    const store = interlock.store
    try {
      if (toStdout) {
        const r = await writeToStdout((out) => exportJournalTo(store, out, systemClock.now()))
        this.logToStderr(`Exported ${r.records} records of ${r.effects} effects to stdout.`)
        return { path: '-', ...r }
      }
      const r = await exportJournal(store, this.flags.out, systemClock.now())
      this.log(`Exported ${r.records} records of ${r.effects} effects to ${r.path}.`)
      return r
    } finally {
      await interlock.close()
    }
  }
}
