/**
 * A separate process appending to a shared SQLite journal, for the
 * multi-process test: `node --import tsx sqlite-writer.ts <file> <name> <count>`.
 * Each effect is driven to COMMITTED one append at a time, all in journal
 * "shared". A writer prints "ready" and starts on a line from stdin, so the
 * test can start both at once and they really overlap.
 */
import { once } from 'node:events'
import { toEffect } from '../../src/core/effect.js'
import { openSqliteStore } from '../../src/core/stores/sqlite/open.js'
import type { AppendRequest } from '../../src/core/stores/store.js'

const [file, name, count] = process.argv.slice(2)
const store = openSqliteStore(file!, { autoInstall: false })
process.stdout.write('ready\n')
await once(process.stdin, 'data')
process.stdin.pause()
for (let i = 0; i < Number(count); i++) {
  const e = toEffect({ thread: 'shared', target: 'svc', action: 'do', args: { writer: name!, i } })
  const steps: AppendRequest[] = [
    { effectId: e.id, from: null, to: 'PROPOSED' as const, data: {}, effect: e, tier: 2 as const },
    { effectId: e.id, from: 'PROPOSED' as const, to: 'AUTHORIZED' as const, data: {} },
    { effectId: e.id, from: 'AUTHORIZED' as const, to: 'DISPATCHED' as const, data: {} },
    { effectId: e.id, from: 'DISPATCHED' as const, to: 'COMMITTED' as const, data: { receipt: { by: name! } } },
  ]
  for (const step of steps) {
    const [result] = await store.append([step])
    if (!result!.ok) throw new Error(`writer ${name}: step ${step.to} of effect ${i} lost`)
    // An agent does some work between steps; without a pause SQLite's busy
    // handler lets one tight loop hold the file until it is done.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 4))
  }
}
await store.close()
