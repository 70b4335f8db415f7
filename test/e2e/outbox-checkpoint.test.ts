/**
 * `interlock outbox checkpoint` through the built binary, on a real SQLite
 * journal: settled history is verified and pinned under a checkpoint an
 * operator signs, stored in the store and written to --out; a second run
 * reads only from the pins on; `outbox verify` then fails a journal whose
 * settled history was rewritten behind the pin, the chain recomputed.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock, type Run } from '../helpers/cli.js'
import type { RawRecord } from '../helpers/outbox-stores.js'
import { settledHistory } from '../helpers/settled-history.js'
import { rechain, withData } from '../helpers/tamper.js'

beforeAll(assertCliBuilt)

const json = (run: Run) => JSON.parse(run.stdout)

describe('interlock outbox checkpoint', () => {
  let cwd: string
  beforeAll(async () => {
    cwd = (await settledHistory('interlock-e2e-checkpoint-')).cwd
  }, 60_000)

  it('pins settled history under a signed checkpoint, stored and written to --out; the next run reads from the pins; verify checks them', async () => {
    const key = ['--key', join(cwd, 'alice.operator.key')]
    const dry = await interlock(['outbox', 'checkpoint', '--dry-run', ...key, '--json'], { cwd })
    expect(dry.code, dry.stderr).toBe(0)
    // "done" whole; "mixed" up to the AMBIGUOUS mail, which stops its pin.
    expect(json(dry)).toMatchObject({ dryRun: true, read: { journals: 2, records: 24 }, journals: 2, records: 16, effects: 4 })
    expect(json(dry)).not.toHaveProperty('checkpoint')

    const out = join(cwd, 'checkpoint.json')
    const run = await interlock(['outbox', 'checkpoint', ...key, '--out', out, '--json'], { cwd })
    expect(run.code, run.stderr).toBe(0)
    expect(json(run)).toMatchObject({ dryRun: false, journals: 2, records: 16, checkpoint: { signer: 'alice', role: 'operator', path: out } })
    const file = JSON.parse(readFileSync(out, 'utf8'))
    expect(file).toMatchObject({ format: 'interlock-checkpoint/v1', store: 'sqlite', heads: [{ journal: 'done', seq: 12 }, { journal: 'mixed', seq: 4 }] })
    expect(file).not.toHaveProperty('archive')

    const again = await interlock(['outbox', 'checkpoint', ...key], { cwd })
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toBe('Nothing new to pin (8 records of 1 journal read and verified).\n')

    const verify = await interlock(['outbox', 'verify', '--json'], { cwd })
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    expect(json(verify).checkpoints).toEqual({ valid: 1, invalid: 0, unchecked: 0 })

    // A settled refund's receipt rewritten, the chain recomputed through the end, the head matched.
    const db = new Database(join(cwd, 'journal.db'))
    const rows = db.prepare(`SELECT journal, seq, effect_id, state, at, data, prev_hash, hash FROM journal_records ORDER BY journal, seq`).all() as RawRecord[]
    const forged = rechain(rows.map((r) => (r.journal === 'done' && r.seq === 4 ? withData(r, (d) => ({ ...d, receipt: { ...d.receipt, forged: true } })) : r)))
    db.transaction(() => {
      const update = db.prepare(`UPDATE journal_records SET data = ?, prev_hash = ?, hash = ? WHERE journal = ? AND seq = ?`)
      for (const r of forged) update.run(r.data, r.prev_hash, r.hash, r.journal, r.seq)
      const head = forged.filter((r) => r.journal === 'done').at(-1)!
      db.prepare(`UPDATE journals SET head_hash = ? WHERE journal = 'done'`).run(head.hash)
      db.prepare(`UPDATE effects SET detail = ? WHERE id = ?`).run(forged[3]!.data, forged[3]!.effect_id)
    })()
    db.close()
    const caught = await interlock(['outbox', 'verify', '--json'], { cwd })
    expect(caught.code).toBe(5)
    const error = json(caught).error
    expect(error).toMatchObject({ code: 'E_INTEGRITY', context: { report: { firstBad: { journal: 'done', seq: 12 } } } })
    expect(error.message).toMatch(/journal "done" record 12 \(COMMITTED\) is not the record checkpoint [0-9a-f]{12}… \(signed by operator alice at .+\) pinned as the end of the settled history it verified/)
    expect(existsSync(out)).toBe(true)
  })

  it('refuses without a key (exit 2), and with a key verify would not trust (exit 3), writing nothing', async () => {
    const none = await interlock(['outbox', 'checkpoint'], { cwd })
    expect(none.code).toBe(2)
    const mallory = await interlock(['operator', 'keygen', '--name', 'mallory', '--json'], { cwd })
    expect(mallory.code, mallory.stderr).toBe(0)
    const untrusted = await interlock(['outbox', 'checkpoint', '--key', join(cwd, 'mallory.operator.key'), '--out', join(cwd, 'never.json')], { cwd })
    expect(untrusted.code).toBe(3)
    expect(existsSync(join(cwd, 'never.json'))).toBe(false)
  })
})
