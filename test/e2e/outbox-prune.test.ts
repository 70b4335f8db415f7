/**
 * `interlock outbox prune` through the built binary, on a real SQLite journal:
 * settled history is archived, pinned by a checkpoint an operator signs, and
 * deleted; `outbox verify` accepts the journals that now start after the
 * checkpoint, `outbox verify --file` the archive on its own, and an open
 * effect stops its journal's cut.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock, type Run } from '../helpers/cli.js'
import { settledHistory, type SettledHistory } from '../helpers/settled-history.js'

beforeAll(assertCliBuilt)

const json = (run: Run) => JSON.parse(run.stdout)

type Setup = SettledHistory

describe('interlock outbox prune', () => {
  let s: Setup
  beforeAll(async () => {
    s = await settledHistory('interlock-e2e-prune-')
  }, 60_000)

  it('archives settled history under a signed checkpoint and deletes it; verify accepts what is left, and the archive on its own', async () => {
    const key = ['--key', join(s.cwd, 'alice.operator.key')]
    const recent = await interlock(['outbox', 'prune', '--older-than', '90d', '--archive', join(s.cwd, 'none.jsonl'), ...key, '--json'], { cwd: s.cwd })
    expect(recent.code, recent.stderr).toBe(0)
    expect(json(recent)).toMatchObject({ effects: 0, records: 0 })
    expect(existsSync(join(s.cwd, 'none.jsonl'))).toBe(false)

    const dry = await interlock(['outbox', 'prune', '--older-than', '0s', '--dry-run', ...key, '--json'], { cwd: s.cwd })
    expect(dry.code, dry.stderr).toBe(0)
    // "done" whole; "mixed" up to the AMBIGUOUS effect, which stops its cut and keeps the effect after it.
    expect(json(dry)).toMatchObject({ dryRun: true, journals: 2, effects: 4 })
    const listed = async () => json(await interlock(['outbox', 'list', '--json'], { cwd: s.cwd })).effects.map((e: { effectId: string }) => e.effectId) as string[]
    expect((await listed()).length).toBe(6)

    const archive = join(s.cwd, 'archive.jsonl')
    const run = await interlock(['outbox', 'prune', '--older-than', '0s', '--archive', archive, ...key, '--json'], { cwd: s.cwd })
    expect(run.code, run.stderr).toBe(0)
    const out = json(run)
    expect(out).toMatchObject({ dryRun: false, journals: 2, effects: 4, checkpoint: { signer: 'alice', role: 'operator' } })
    expect(out.records).toBe(json(dry).records)
    expect(existsSync(out.checkpoint.path)).toBe(true)
    expect(readFileSync(archive, 'utf8').trim().split('\n').length).toBeGreaterThanOrEqual(out.records)

    expect((await listed()).sort()).toEqual([s.ambiguous, s.after].sort())
    const verify = await interlock(['outbox', 'verify', '--json'], { cwd: s.cwd })
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    const file = await interlock(['outbox', 'verify', '--file', archive, '--json'], { cwd: s.cwd })
    expect(file.code, file.stdout + file.stderr).toBe(0)
    // The history left still reads as a chain from the checkpoint on.
    const show = await interlock(['outbox', 'show', s.after, '--json'], { cwd: s.cwd })
    expect(show.code, show.stderr).toBe(0)

    // A second run finds nothing more to take (the open effect still stops "mixed").
    const again = await interlock(['outbox', 'prune', '--older-than', '0s', '--archive', join(s.cwd, 'again.jsonl'), ...key, '--json'], { cwd: s.cwd })
    expect(again.code, again.stderr).toBe(0)
    expect(json(again)).toMatchObject({ effects: 0 })
  })

  it('without the checkpoint signer among the trusted operators, verify does not take the pruned journals as verified', async () => {
    const other = await interlock(['operator', 'keygen', '--name', 'mallory', '--json'], { cwd: s.cwd })
    expect(other.code, other.stderr).toBe(0)
    const config = readFileSync(join(s.cwd, 'interlock.toml'), 'utf8').replace(s.publicKey, json(other).publicKey)
    writeFileSync(join(s.cwd, 'untrusting.toml'), config)
    const verify = await interlock(['outbox', 'verify', '--config', join(s.cwd, 'untrusting.toml'), '--json'], { cwd: s.cwd })
    expect(verify.code).toBe(5)
  })
})
