import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { systemClock } from '../../core/clock.js'
import { exportJournal } from '../../core/outbox/export-file.js'

export default class OutboxExport extends BaseCommand<typeof OutboxExport> {
  static override summary = 'Write every journal to a file that `outbox verify --file` checks offline.'
  static override description = `JSON Lines: a header, every journal record exactly as stored (hash-chained, signatures included), and an end line with where every effect's records end, so a file cut short is detected. Never overwrites a file.

Exit codes: 0 written; 1 the file exists or cannot be written; 3 config invalid; 4 store unreachable.`
  static override examples = ['<%= config.bin %> <%= command.id %> --out journal-2026-01.jsonl', '<%= config.bin %> <%= command.id %> --out audit.jsonl --json']
  static override flags = { out: Flags.string({ required: true, helpValue: '<file>', description: 'File to write (must not exist).' }) }

  async run(): Promise<{ path: string; records: number; effects: number }> {
    const interlock = await this.openInterlock()
    const store = interlock.store
    try {
      const r = await exportJournal(store, this.flags.out, systemClock.now())
      this.log(`Exported ${r.records} records of ${r.effects} effects to ${r.path}.`)
      return r
    } finally {
      await interlock.close()
    }
  }
}
