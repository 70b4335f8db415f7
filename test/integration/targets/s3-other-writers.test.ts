/**
 * The S3 target beside other writers and narrower permissions, as S3 documents them:
 * conditional deletes, a query that meets an object someone else wrote after
 * ours, HeadObject's 403 without s3:ListBucket, and 409 ConditionalRequestConflict.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { JsonObject } from '../../../src/core/canonical-json.js'
import { toEffect, type Effect, type EffectInput } from '../../../src/core/effect.js'
import { DispatchFault, TargetError } from '../../../src/core/errors.js'
import type { S3Target } from '../../../src/core/targets/s3/index.js'
import type { ApplyContext } from '../../../src/core/targets/target.js'
import { S3Emulator } from '../../emulators/s3.js'
import { dispatchFault } from '../../helpers/dispatch-fault.js'
import { thenMeanwhile } from '../../helpers/meanwhile.js'
import { emulatedS3Target } from '../../helpers/s3-target.js'
import { journalDispatched, sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'

const first: ApplyContext = { attempt: 1, recovering: false }
const THREAD = 'agent-1'
let s3: S3Emulator
let sg: SqliteGate

function target(name: 's3' | 's3v'): S3Target {
  return emulatedS3Target(s3, name, { timeoutMs: 2000, connectTimeoutMs: 400 })
}

beforeEach(async () => {
  s3 = await new S3Emulator().start()
  s3.createBucket('docs').createBucket('history', { versioning: true })
  sg = await sqliteGate(() => [target('s3'), target('s3v')])
})
afterEach(async () => {
  await sg.cleanup()
  await s3.close()
})

async function captured(name: 's3' | 's3v', action: string, args: JsonObject): Promise<EffectInput> {
  return { thread: THREAD, target: name, action, args, premises: await sg.gate.capture(name, action, args) }
}

/** Journals the effect DISPATCHED and sends it once under a fault that leaves the answer unknown, as a crash in flight would. */
async function inFlight(input: EffectInput, mode: 'apply-then-drop' | 'reset-before-apply', route: string): Promise<Effect> {
  const effect = toEffect(input)
  await journalDispatched(sg.store, effect, 2)
  s3.fault({ mode, route })
  expect((await dispatchFault(sg.gate.target(input.target).apply(effect, first))).kind).toBe('unknown')
  return effect
}

/** The next process recovers; what it did with `effect` (effects already waiting for an operator are only listed). */
async function recoverOne(effect?: Effect) {
  const report = await (await sg.restart()).gate.recover()
  const acted = report.effects.filter((e) => (effect ? e.effectId === effect.id : e.action !== 'waiting'))
  expect(acted).toHaveLength(1)
  return acted[0]!
}

/** The named S3 target, with another writer's change after its premise check. */
const meanwhile = (name: 's3' | 's3v', change: () => void) => thenMeanwhile(sg.gate.target(name), change)

describe('S3 deletes are conditional (If-Match), not a check and then a delete', () => {
  it('a compensation delete meets another writer\'s object put after the premise check: 412, REJECTED, their object survives', async () => {
    const input = await captured('s3', 'put', { key: 'made.txt', body: 'ours' })
    const put = await sg.gate.submit(input)
    if (put.status !== 'committed') throw new Error(put.status)
    const comp = await sg.gate.target('s3').compensation!(toEffect(input), put.receipt)
    expect(comp).toMatchObject({ action: 'delete', premises: { exists: true, etag: put.receipt.etag } })
    meanwhile('s3', () => s3.putDirect('docs', 'made.txt', 'theirs'))
    const out = await sg.gate.submit({ thread: THREAD, target: 's3', ...comp })
    expect(out).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('answered 412: the object is no longer the one the decision saw (PreconditionFailed')] })
    expect(s3.current('docs', 'made.txt')!.body.toString()).toBe('theirs')
    expect(s3.count('DELETE docs/made.txt')).toBe(0)
  })

  it('on a versioned bucket too; a delete whose object is gone meanwhile is 404, REJECTED; an unchanged one is deleted', async () => {
    s3.putDirect('history', 'a.txt', 'v1')
    s3.putDirect('history', 'b.txt', 'v1')
    s3.putDirect('history', 'c.txt', 'v1')
    const [a, b, c] = [await captured('s3v', 'delete', { key: 'a.txt' }), await captured('s3v', 'delete', { key: 'b.txt' }), await captured('s3v', 'delete', { key: 'c.txt' })]
    meanwhile('s3v', () => s3.putDirect('history', 'a.txt', 'v2'))
    expect(await sg.gate.submit(a)).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('answered 412')] })
    meanwhile('s3v', () => s3.deleteDirect('history', 'b.txt'))
    expect(await sg.gate.submit(b)).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('answered 404: the object is no longer the one the decision saw (NoSuchKey')] })
    meanwhile('s3v', () => undefined)
    expect(await sg.gate.submit(c)).toMatchObject({ status: 'committed', receipt: { deleted: true } })
    expect(s3.current('history', 'a.txt')!.body.toString()).toBe('v2')
    expect(s3.current('history', 'c.txt')).toBeUndefined()
  })
})

describe('S3 query meets an object another writer wrote after the decision', () => {
  it('unversioned: our put landed, then theirs; recovery cannot know, says so (AMBIGUOUS) and does not write again', async () => {
    // No premises: a re-apply would be an unconditional put over theirs, our write applied a second time.
    const effect = await inFlight({ thread: THREAD, target: 's3', action: 'put', args: { key: 'r.txt', body: 'ours' } }, 'apply-then-drop', 'PUT /docs/')
    s3.putDirect('docs', 'r.txt', 'theirs')
    const r = await recoverOne()
    expect(r).toMatchObject({ effectId: effect.id, action: 'marked-ambiguous', outcome: { status: 'ambiguous', reason: expect.stringContaining('the bucket is not versioned, so whether this write landed before it cannot be known') } })
    expect(s3.count(effect.id)).toBe(1)
    expect(s3.current('docs', 'r.txt')!.body.toString()).toBe('theirs')
    expect((await sg.store.get(effect.id))!.state).toBe('AMBIGUOUS')
  })

  it('unversioned, with premises: the same, rather than a 412 that would call a landed write REJECTED', async () => {
    const effect = await inFlight(await captured('s3', 'put', { key: 'p.txt', body: 'ours' }), 'apply-then-drop', 'PUT /docs/')
    s3.putDirect('docs', 'p.txt', 'theirs')
    expect(await recoverOne()).toMatchObject({ action: 'marked-ambiguous', outcome: { status: 'ambiguous' } })
    expect(s3.count(effect.id)).toBe(1)
  })

  it('unversioned, still as the decision saw it: not found, applied (a crash before the send)', async () => {
    const was = s3.putDirect('docs', 'q.txt', 'before')
    const effect = await inFlight(await captured('s3', 'put', { key: 'q.txt', body: 'ours' }), 'reset-before-apply', 'PUT /docs/')
    expect(effect.premises).toMatchObject({ exists: true, etag: was.etag })
    expect(await recoverOne()).toMatchObject({ action: 'applied-after-query', outcome: { status: 'committed' } })
    expect(s3.count(effect.id)).toBe(1)
  })

  it('versioned: our version is found in the key\'s history, marked superseded; nothing is written again', async () => {
    s3.putDirect('history', 'v.txt', 'before')
    const effect = await inFlight(await captured('s3v', 'put', { key: 'v.txt', body: 'ours' }), 'apply-then-drop', 'PUT /history/')
    const ours = s3.current('history', 'v.txt')!
    s3.putDirect('history', 'v.txt', 'theirs')
    const r = await recoverOne()
    expect(r).toMatchObject({ action: 'found-by-query', outcome: { status: 'committed', receipt: { etag: ours.etag, version_id: ours.versionId, superseded: true } } })
    expect(s3.count(effect.id)).toBe(1)
    expect(s3.current('history', 'v.txt')!.body.toString()).toBe('theirs')
  })

  it('versioned: not in the history, so definitely not written; sent again, and the pushed-down condition rejects it', async () => {
    const effect = await inFlight(await captured('s3v', 'put', { key: 'w.txt', body: 'ours' }), 'reset-before-apply', 'PUT /history/')
    s3.putDirect('history', 'w.txt', 'theirs')
    expect(await recoverOne()).toMatchObject({ action: 'applied-after-query', outcome: { status: 'rejected' } })
    expect(s3.count(effect.id)).toBe(0)
    expect(s3.requests.filter((q) => q.method === 'GET' && q.path === '/history')).toHaveLength(1)
  })

  it('a delete that landed, then another writer\'s put: unversioned cannot know (their object survives); versioned finds its marker', async () => {
    s3.putDirect('docs', 'd.txt', 'old')
    s3.putDirect('history', 'd.txt', 'old')
    const plain = await inFlight(await captured('s3', 'delete', { key: 'd.txt' }), 'apply-then-drop', 'DELETE /docs/')
    s3.putDirect('docs', 'd.txt', 'theirs')
    expect(await recoverOne()).toMatchObject({ effectId: plain.id, action: 'marked-ambiguous', outcome: { reason: expect.stringContaining('deleting again could delete another writer\'s object') } })
    expect(s3.current('docs', 'd.txt')!.body.toString()).toBe('theirs')

    const versioned = await inFlight(await captured('s3v', 'delete', { key: 'd.txt' }), 'apply-then-drop', 'DELETE /history/')
    const marker = s3.versions('history', 'd.txt').at(-1)!
    expect(marker.deleteMarker).toBe(true)
    s3.putDirect('history', 'd.txt', 'theirs')
    const r = await recoverOne(versioned)
    expect(r).toMatchObject({ effectId: versioned.id, action: 'found-by-query', outcome: { receipt: { deleted: true, version_id: marker.versionId, superseded: true } } })
    expect(s3.current('history', 'd.txt')!.body.toString()).toBe('theirs')
    expect(s3.count('DELETE history/d.txt')).toBe(1)
  })

  it('versioned, but the keys may not list versions (s3:ListBucketVersions): AMBIGUOUS, naming the permission', async () => {
    s3.putDirect('history', 'l.txt', 'before')
    await inFlight(await captured('s3v', 'put', { key: 'l.txt', body: 'ours' }), 'apply-then-drop', 'PUT /history/')
    s3.putDirect('history', 'l.txt', 'theirs')
    s3.deny('s3:ListBucketVersions')
    expect(await recoverOne()).toMatchObject({ action: 'marked-ambiguous', outcome: { reason: expect.stringContaining('s3:ListBucketVersions') } })
  })
})

describe('S3 HeadObject answers 403 instead of 404 without s3:ListBucket', () => {
  it('recovery cannot tell a write that never landed: AMBIGUOUS with the permission to grant, not an effect retried forever', async () => {
    const effect = await inFlight(await captured('s3', 'put', { key: 'n.txt', body: 'ours' }), 'reset-before-apply', 'PUT /docs/')
    s3.deny('s3:ListBucket')
    const r = await recoverOne()
    expect(r).toMatchObject({ action: 'marked-ambiguous', outcome: { status: 'ambiguous', reason: expect.stringContaining('answered 403 AccessDenied for s3://docs/n.txt: the keys may not list the bucket (s3:ListBucket)') } })
    expect((r.outcome as { reason: string }).reason).toContain('Grant the target\'s keys s3:ListBucket')
    expect(s3.count(effect.id)).toBe(0)
  })

  it('capture and the premise check say why, naming the permission', async () => {
    s3.deny('s3:ListBucket')
    const e = await sg.gate.capture('s3', 'put', { key: 'm.txt', body: 'x' }).catch((err: unknown) => err)
    expect(e).toBeInstanceOf(TargetError)
    expect((e as TargetError).message).toContain('S3 answers 403 instead of 404 for an object that does not exist')
    expect((e as TargetError).hint).toContain('s3:ListBucket')
  })

  it('a 403 for another reason (a clock off by 20 minutes) is not taken for a missing permission: the query fails and is asked again', async () => {
    const t = emulatedS3Target(s3, 's3', {}, { now: () => Date.now() - 20 * 60_000 })
    try {
      const e = await t.query(toEffect({ thread: THREAD, target: 's3', action: 'put', args: { key: 'k.txt', body: 'x' } })).catch((err: unknown) => err)
      expect(e).toBeInstanceOf(TargetError)
      expect(e).not.toBeInstanceOf(DispatchFault)
      expect((e as Error).message).toContain('RequestTimeTooSkewed')
    } finally {
      await t.close()
    }
  })

  it('an object that exists is read as before', async () => {
    s3.putDirect('docs', 'e.txt', 'here')
    s3.deny('s3:ListBucket')
    expect(await sg.gate.capture('s3', 'put', { key: 'e.txt', body: 'x' })).toMatchObject({ exists: true })
  })
})

describe('S3 409 ConditionalRequestConflict', () => {
  it('a conditional put during which another write completed: 409, retried; the retried condition then rejects it', async () => {
    const was = s3.putDirect('docs', 'c.txt', 'v1')
    const input = await captured('s3', 'put', { key: 'c.txt', body: 'ours' })
    s3.delayNext(150, () => s3.putDirect('docs', 'c.txt', 'v2'))
    const sent = sg.gate.target('s3').apply(toEffect(input), first)
    const f = await dispatchFault(sent)
    expect(f).toMatchObject({ kind: 'retry-later', context: { status: 409, code: 'ConditionalRequestConflict' } })
    expect(s3.current('docs', 'c.txt')!.etag).not.toBe(was.etag)

    meanwhile('s3', () => s3.delayNext(150, () => s3.putDirect('docs', 'c.txt', 'v3')))
    const out = await sg.gate.submit(await captured('s3', 'put', { key: 'c.txt', body: 'ours again' }))
    expect(out).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('answered 412')] })
    expect(s3.current('docs', 'c.txt')!.body.toString()).toBe('v3')
    expect(s3.requests.filter((q) => q.method === 'PUT')).toHaveLength(3)
  })

  it('a conditional delete during which another write completed: 409; during which the object was deleted, a conditional put is 404', async () => {
    s3.putDirect('docs', 'x.txt', 'v1')
    const del = toEffect(await captured('s3', 'delete', { key: 'x.txt' }))
    s3.delayNext(150, () => s3.putDirect('docs', 'x.txt', 'v2'))
    const deleting = sg.gate.target('s3').apply(del, first)
    expect(await dispatchFault(deleting)).toMatchObject({ kind: 'retry-later', context: { status: 409 } })
    expect(s3.current('docs', 'x.txt')!.body.toString()).toBe('v2')

    const put = toEffect(await captured('s3', 'put', { key: 'x.txt', body: 'ours' }))
    s3.delayNext(150, () => s3.deleteDirect('docs', 'x.txt'))
    const putting = sg.gate.target('s3').apply(put, first)
    expect(await dispatchFault(putting)).toMatchObject({ kind: 'premise', context: { status: 404, code: 'NoSuchKey' } })
  })

  it('an unconditional write is not held to it', async () => {
    s3.delayNext(100, () => s3.putDirect('docs', 'u.txt', 'theirs'))
    const sent = sg.gate.target('s3').apply(toEffect({ thread: THREAD, target: 's3', action: 'put', args: { key: 'u.txt', body: 'ours' } }), first)
    expect(await sent).toMatchObject({ key: 'u.txt' })
    expect(s3.current('docs', 'u.txt')!.body.toString()).toBe('ours')
  })
})

describe('S3 probe for `interlock check`', () => {
  it('a key that does not exist answers 404: tier 2 holds', async () => {
    const t = target('s3')
    try {
      const p = await t.probe()
      expect(p).toMatchObject({ ok: true, tier: { ok: true } })
      expect(p.warn).toBeUndefined()
      expect(s3.applications.size).toBe(0)
    } finally {
      await t.close()
    }
  })

  it('without s3:ListBucket: the keys work, but tier 2 cannot be honoured, and the fix names the permission', async () => {
    s3.deny('s3:ListBucket')
    const t = target('s3')
    try {
      const p = await t.probe()
      expect(p).toMatchObject({ ok: true, warn: true, tier: { ok: false, detail: expect.stringContaining('S3 answers 403 instead of 404 for an object that does not exist') } })
      expect(p.tier!.fix).toContain('s3:ListBucket')
      expect(p.credentialRefused).toBeUndefined()
    } finally {
      await t.close()
    }
  })

  it('refused keys are told apart from a missing permission', async () => {
    const t = emulatedS3Target(s3, 's3', { secretAccessKey: 'wrongSecret/0000000000000000000000000000' })
    try {
      expect(await t.probe()).toMatchObject({ ok: false, credentialRefused: true, detail: expect.stringContaining('SignatureDoesNotMatch') })
    } finally {
      await t.close()
    }
  })
})
