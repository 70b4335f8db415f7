/**
 * A project for the commands that read settled history (outbox checkpoint,
 * outbox prune): an operator "alice" with her key in the folder, a SQLite
 * journal, and two journals written through a real gate. Journal "done":
 * three refunds, settled (records 1-12). Journal "mixed": a refund (1-4), a
 * mail no one can know, left AMBIGUOUS (5-8), a refund (9-12).
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { Gate } from '../../src/core/gate.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { openStore } from '../../src/core/stores/open.js'
import { interlock } from './cli.js'
import { CountingTarget } from './counting-target.js'

export interface SettledHistory {
  cwd: string
  publicKey: string
  /** The settled effects before the AMBIGUOUS one: "done"'s three, then "mixed"'s first. */
  settled: string[]
  ambiguous: string
  /** "mixed"'s refund after the AMBIGUOUS mail. */
  after: string
}

export async function settledHistory(prefix: string): Promise<SettledHistory> {
  const cwd = mkdtempSync(join(tmpdir(), prefix))
  const keygen = await interlock(['operator', 'keygen', '--name', 'alice', '--json'], { cwd })
  expect(keygen.code, keygen.stderr).toBe(0)
  const publicKey = (JSON.parse(keygen.stdout) as { publicKey: string }).publicKey
  const config = `
[store]
path = "journal.db"
[targets.refunds]
type = "http"
tier = 1
url = "http://127.0.0.1:9/refunds"
[targets.mail]
type = "http"
tier = 3
url = "http://127.0.0.1:9/mail"
[[operators]]
name = "alice"
public_key = "${publicKey}"
`
  writeFileSync(join(cwd, 'interlock.toml'), config)
  const store = await openStore(parseConfig(config, { file: join(cwd, 'interlock.toml'), env: {} }).store)
  const mail = new CountingTarget('mail', 3)
  mail.faults.push({ kind: 'unknown' })
  const gate = new Gate({ store, targets: [new CountingTarget('refunds', 1), mail], policy: new RulesPolicy([]), retry: { maxAttempts: 1, backoffMs: 0 } })
  try {
    const refund = (thread: string, amount: string) => gate.submit({ thread, target: 'refunds', action: 'refund', args: { amount, currency: 'USD' } })
    const done = [await refund('done', '1.00'), await refund('done', '2.00'), await refund('done', '3.00')]
    const first = await refund('mixed', '4.00')
    const ambiguous = await gate.submit({ thread: 'mixed', target: 'mail', action: 'send', args: { to: 'a@example.com' } })
    const after = await refund('mixed', '5.00')
    expect([...done, first, after].map((o) => o.status)).toEqual(['committed', 'committed', 'committed', 'committed', 'committed'])
    expect(ambiguous.status).toBe('ambiguous')
    return { cwd, publicKey, settled: [...done, first].map((o) => o.effectId), ambiguous: ambiguous.effectId, after: after.effectId }
  } finally {
    await gate.close()
    await store.close()
  }
}
