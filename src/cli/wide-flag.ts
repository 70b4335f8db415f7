/**
 * `--wide`, for every command that prints tables: on a terminal, tables are
 * fitted to its width (cli/table.ts); this keeps every column whole instead,
 * however wide the lines. Off a terminal they are whole anyway, and --json
 * has everything.
 */
import { Flags } from '@oclif/core'

export const wideFlag = {
  wide: Flags.boolean({
    description: 'On a terminal, print tables with every column whole, however wide; they are otherwise fitted to its width (text wrapped, effect ids cut to a prefix `outbox show` takes).',
  }),
}
