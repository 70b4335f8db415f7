import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { AwsV4Signer } from 'aws4fetch'
import { Agent } from 'undici'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { JsonObject } from '../../../src/core/canonical-json.js'
import { toEffect, type Effect } from '../../../src/core/effect.js'
import { ConfigError, DispatchFault, InputError } from '../../../src/core/errors.js'
import { S3Target, type S3TargetOptions, type S3TargetSettings } from '../../../src/core/targets/s3/index.js'
import type { ApplyContext } from '../../../src/core/targets/target.js'
import type { FaultMode } from '../../emulators/emulator.js'
import { S3Emulator } from '../../emulators/s3.js'
import { journalDispatched, journalText, sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'
import { dispatchFault } from '../../helpers/dispatch-fault.js'
import { thenMeanwhile } from '../../helpers/meanwhile.js'
import { emulatedS3Target } from '../../helpers/s3-target.js'

const first: ApplyContext = { attempt: 1, recovering: false }
const THREAD = 'agent-1'
let s3: S3Emulator
let sg: SqliteGate
const extra: S3Target[] = []

function target(name = 's3', over: Partial<S3TargetSettings> = {}, options: S3TargetOptions = {}): S3Target {
  return emulatedS3Target(s3, name, { timeoutMs: 400, connectTimeoutMs: 400, ...over }, options)
}

function own(t: S3Target): S3Target {
  extra.push(t)
  return t
}

beforeEach(async () => {
  s3 = await new S3Emulator().start()
  s3.createBucket('docs').createBucket('history', { versioning: true })
  sg = await sqliteGate(() => [target('s3'), target('s3v')])
})
afterEach(async () => {
  for (const t of extra.splice(0)) await t.close()
  await sg.cleanup()
  await s3.close()
})

async function putInput(args: JsonObject, name = 's3') {
  return { thread: THREAD, target: name, action: 'put', args, premises: await sg.gate.capture(name, 'put', args) }
}

function puts(): number {
  return s3.requests.filter((r) => r.method === 'PUT').length
}

async function fault(p: Promise<unknown>): Promise<DispatchFault> {
  const e = await dispatchFault(p)
  const text = JSON.stringify({ m: (e as Error).message, j: (e as DispatchFault).toJSON() })
  expect(text).not.toContain(s3.secretAccessKey)
  expect(text).not.toContain(s3.accessKeyId)
  return e as DispatchFault
}

describe('S3 put through a gate on SQLite', () => {
  it('puts a new object with If-None-Match: * and the effect id in its metadata; query finds it; no credential in the journal', async () => {
    const input = await putInput({ key: 'reports/2030 Q1.txt', body: 'revenue up', content_type: 'text/plain', metadata: { author: 'agent' } })
    expect(input.premises).toEqual({ exists: false })
    const out = await sg.gate.submit(input)
    expect(out.status).toBe('committed')
    if (out.status !== 'committed') return
    const obj = s3.current('docs', 'reports/2030 Q1.txt')!
    expect(out.receipt).toEqual({ bucket: 'docs', key: 'reports/2030 Q1.txt', etag: obj.etag })
    expect(obj.body.toString()).toBe('revenue up')
    expect(obj.contentType).toBe('text/plain')
    expect(obj.metadata).toEqual({ author: 'agent', 'interlock-effect': out.effectId })
    expect(s3.count(out.effectId)).toBe(1)
    expect(await sg.gate.target('s3').query!(toEffect(input))).toEqual(out.receipt)
    const journal = await journalText(sg.store)
    expect(journal).not.toContain(s3.secretAccessKey)
    expect(journal).not.toContain(s3.accessKeyId)
  })

  it('overwrites with If-Match on the premised ETag; bytes arrive intact; a versioned bucket answers with the version', async () => {
    const before = s3.putDirect('history', 'logo.png', 'old logo')
    const bytes = Buffer.from([0, 255, 128, 10, 13, 0xc3])
    const input = await putInput({ key: 'logo.png', body: bytes.toString('base64'), encoding: 'base64' }, 's3v')
    expect(input.premises).toEqual({ exists: true, etag: before.etag, version_id: before.versionId })
    const out = await sg.gate.submit(input)
    expect(out).toMatchObject({ status: 'committed', receipt: { etag: s3.current('history', 'logo.png')!.etag, version_id: s3.current('history', 'logo.png')!.versionId } })
    expect(s3.current('history', 'logo.png')!.body.equals(bytes)).toBe(true)
    expect(s3.versions('history', 'logo.png')).toHaveLength(2)
  })
})

describe('S3 keys', () => {
  it('spaces, non-ASCII and RFC 3986 reserved characters are signed and addressed as S3 expects', async () => {
    const key = "dir/ü (1)!*'~+&=.txt"
    const out = await sg.gate.submit(await putInput({ key, body: 'odd' }))
    expect(out.status).toBe('committed')
    expect(s3.current('docs', key)!.body.toString()).toBe('odd')
  })
})

describe('S3 premises', () => {
  it('an object that appeared after the decision: REJECTED by validatePremises, nothing sent', async () => {
    const input = await putInput({ key: 'a.txt', body: 'mine' })
    s3.putDirect('docs', 'a.txt', 'theirs')
    const out = await sg.gate.submit(input)
    expect(out).toMatchObject({ status: 'rejected', violations: [expect.stringMatching(/^s3:\/\/docs\/a\.txt exists now \(ETag "[0-9a-f]{32}"\); the decision expected no object there$/)] })
    expect(puts()).toBe(0)
  })

  it('an object that changed after the decision: REJECTED, naming both ETags', async () => {
    const was = s3.putDirect('docs', 'a.txt', 'v1')
    const input = await putInput({ key: 'a.txt', body: 'mine' })
    const now = s3.putDirect('docs', 'a.txt', 'v2')
    const out = await sg.gate.submit(input)
    expect(out).toMatchObject({ status: 'rejected', violations: [`s3://docs/a.txt changed since the decision (ETag was ${was.etag}, now ${now.etag})`] })
    expect(s3.current('docs', 'a.txt')!.body.toString()).toBe('v2')
  })

  it('a write between the check and the put: S3 answers 412 (If-None-Match pushed down), REJECTED, the other write survives', async () => {
    const input = await putInput({ key: 'a.txt', body: 'mine' })
    thenMeanwhile(sg.gate.target('s3') as S3Target, () => s3.putDirect('docs', 'a.txt', 'theirs'))
    const out = await sg.gate.submit(input)
    expect(out).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('answered 412: the object exists now, and the decision expected none (PreconditionFailed')] })
    expect(puts()).toBe(1)
    expect(s3.count(out.effectId)).toBe(0)
    expect(s3.current('docs', 'a.txt')!.body.toString()).toBe('theirs')
  })

  it('If-Match pushed down: a changed object is 412, a deleted one 404; both REJECTED', async () => {
    s3.putDirect('docs', 'a.txt', 'v1')
    s3.putDirect('docs', 'b.txt', 'v1')
    const changed = await putInput({ key: 'a.txt', body: 'mine' })
    const gone = await putInput({ key: 'b.txt', body: 'mine' })
    const t = sg.gate.target('s3') as S3Target
    thenMeanwhile(t, () => s3.putDirect('docs', 'a.txt', 'v2'))
    expect(await sg.gate.submit(changed)).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('answered 412: the object is no longer the one the decision saw')] })
    thenMeanwhile(t, () => s3.buckets.get('docs')!.objects.delete('b.txt'))
    expect(await sg.gate.submit(gone)).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('answered 404: the object is no longer the one the decision saw (NoSuchKey')] })
    expect(s3.current('docs', 'a.txt')!.body.toString()).toBe('v2')
  })
})

describe('S3 put: every fault, then crash recovery', () => {
  const cases: [FaultMode, boolean][] = [
    ['apply-then-drop', true],
    ['reset-after-apply', true],
    ['reset-before-apply', false],
    ['5xx', false],
    ['hang', false],
  ]
  for (const [mode, lands] of cases) {
    it(`${mode}: the object is written exactly once, ${lands ? 'found by query' : 'applied after query'}`, async () => {
      const effect = toEffect(await putInput({ key: `k-${mode}`, body: mode }))
      await journalDispatched(sg.store, effect, 2)
      s3.fault({ mode, route: 'PUT /docs/' })
      expect((await fault(sg.gate.target('s3').apply(effect, first))).kind).toBe('unknown')
      expect(s3.count(effect.id)).toBe(lands ? 1 : 0)

      const report = await (await sg.restart()).gate.recover()
      expect(report.effects).toEqual([expect.objectContaining({ effectId: effect.id, found: 'DISPATCHED', action: lands ? 'found-by-query' : 'applied-after-query' })])
      expect(report.effects[0]!.outcome).toEqual({
        status: 'committed',
        effectId: effect.id,
        receipt: { bucket: 'docs', key: `k-${mode}`, etag: s3.current('docs', `k-${mode}`)!.etag },
        via: lands ? 'query' : 'apply',
      })
      expect(s3.count(effect.id)).toBe(1)
      expect(s3.current('docs', `k-${mode}`)!.body.toString()).toBe(mode)
    })
  }

  it('a gate out of tries leaves the put in flight; recovery finishes it', async () => {
    const once = await sqliteGate(() => [target('s3')], { retry: { maxAttempts: 1 } })
    try {
      s3.fault({ mode: '5xx', status: 503, route: 'PUT /docs/' })
      const args = { key: 'late.txt', body: 'x' }
      const out = await once.gate.submit({ thread: THREAD, target: 's3', action: 'put', args, premises: await once.gate.capture('s3', 'put', args) })
      expect(out).toMatchObject({ status: 'in_flight', state: 'DISPATCHED', reason: expect.stringContaining('answered 503') })
      expect((await (await once.restart()).gate.recover()).counts).toEqual({ committed: 1 })
      expect(s3.count(out.effectId)).toBe(1)
    } finally {
      await once.cleanup()
    }
  })

  it('a delete whose answer was lost is found by the object being gone', async () => {
    s3.putDirect('docs', 'old.txt', 'x')
    const args = { key: 'old.txt' }
    const effect = toEffect({ thread: THREAD, target: 's3', action: 'delete', args, premises: await sg.gate.capture('s3', 'delete', args) })
    await journalDispatched(sg.store, effect, 2)
    s3.fault({ mode: 'apply-then-drop', route: 'DELETE /docs/' })
    expect((await fault(sg.gate.target('s3').apply(effect, first))).kind).toBe('unknown')
    const report = await (await sg.restart()).gate.recover()
    expect(report.effects[0]).toMatchObject({ action: 'found-by-query', outcome: { status: 'committed', receipt: { bucket: 'docs', key: 'old.txt', deleted: true } } })
    expect(s3.count('DELETE docs/old.txt')).toBe(1)
  })

  it('a connection refused before anything is written: not sent', async () => {
    const closed = http.createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as AddressInfo).port
    await new Promise((r) => closed.close(r))
    const t = own(target('s3', { endpoint: `http://127.0.0.1:${port}` }))
    const f = await fault(t.apply(toEffect({ thread: THREAD, target: 's3', action: 'put', args: { key: 'a', body: 'b' } }), first))
    expect(f.kind).toBe('not-sent')
  })
})

describe('S3 signatures and addressing', () => {
  it('aws4fetch reproduces the signature of AWS\'s own documented example', async () => {
    // https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "Example: GET Object".
    const signer = new AwsV4Signer({
      method: 'GET',
      url: 'https://examplebucket.s3.amazonaws.com/test.txt',
      headers: { range: 'bytes=0-9', 'x-amz-content-sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
      accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      service: 's3',
      region: 'us-east-1',
      datetime: '20130524T000000Z',
      allHeaders: true,
    })
    expect(await signer.signature()).toBe('f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41')
  })

  it('a wrong secret key: 403 SignatureDoesNotMatch, refused, with S3\'s words and no credential', async () => {
    const t = own(target('s3', { secretAccessKey: 'wrongSecretKey/111111111111111111111111' }))
    const f = await fault(t.apply(toEffect({ thread: THREAD, target: 's3', action: 'put', args: { key: 'a', body: 'b' } }), first))
    expect(f.kind).toBe('refused')
    expect(f.message).toContain('refused (403): SignatureDoesNotMatch: The request signature we calculated does not match')
    expect(s3.current('docs', 'a')).toBeUndefined()
  })

  it('a clock 20 minutes off: 403 RequestTimeTooSkewed', async () => {
    const t = own(target('s3', {}, { now: () => Date.now() - 20 * 60_000 }))
    const f = await fault(t.apply(toEffect({ thread: THREAD, target: 's3', action: 'put', args: { key: 'a', body: 'b' } }), first))
    expect(f.message).toContain('RequestTimeTooSkewed')
  })

  it('virtual-hosted addressing: the bucket in the host name', async () => {
    const port = new URL(s3.url).port
    // Every <bucket>.localhost resolves to the emulator, as a real bucket host name resolves to S3.
    const lookup = (_host: string, o: { all?: boolean }, cb: (e: null, a: unknown, f?: number) => void) =>
      o.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)
    const dispatcher = new Agent({ connect: { lookup } as never })
    try {
      const t = own(target('s3', { endpoint: `http://localhost:${port}`, pathStyle: false }, { dispatcher }))
      const e = toEffect({ thread: THREAD, target: 's3', action: 'put', args: { key: 'dir/v.txt', body: 'hosted' }, premises: { exists: false } })
      const receipt = await t.apply(e, first)
      expect(s3.current('docs', 'dir/v.txt')!.body.toString()).toBe('hosted')
      expect(await t.query(e)).toEqual(receipt)
    } finally {
      await dispatcher.close()
    }
  })
})

describe('S3 bad input', () => {
  it('is refused at submit, naming the argument; nothing is journaled or sent', async () => {
    const bad: [string, JsonObject, RegExp][] = [
      ['put', { key: 'a/../b', body: 'x' }, /key may not have "\." or "\.\." segments/],
      ['put', { key: '', body: 'x' }, /key must be an object key of 1 to 1024 bytes/],
      ['put', { key: 'a', body: 'x', metadata: { 'interlock-effect': 'forged' } }, /may not set "interlock-effect"/],
      ['put', { key: 'a', body: 'x', encoding: 'hex' }, /encoding must be "utf8" or "base64"/],
      ['put', { key: 'a', body: '%%%', encoding: 'base64' }, /not valid base64/],
      ['put', { key: 'a', body: 'x', acl: 'public-read' }, /unknown argument\(s\) acl/],
      ['restore', { key: 'a' }, /version_id must be an S3 version id/],
      ['copy', { key: 'a' }, /no action "copy"/],
    ]
    for (const [action, args, why] of bad) {
      await expect(sg.gate.submit({ thread: THREAD, target: 's3', action, args })).rejects.toThrow(why)
    }
    await expect(sg.gate.capture('s3', 'put', { key: 'a/./b', body: 'x' })).rejects.toBeInstanceOf(InputError)
    expect(await journalText(sg.store)).toBe('')
    expect(s3.requests).toHaveLength(0)
  })

  it('apply refuses bad arguments without sending; settings are checked by key', async () => {
    const f = await fault(sg.gate.target('s3').apply(toEffect({ thread: THREAD, target: 's3', action: 'put', args: { key: 'a' } }), first))
    expect(f.kind).toBe('refused')
    expect(s3.requests).toHaveLength(0)
    let problems: readonly string[] = []
    try {
      target('s3', { bucket: 'Bad_Bucket', region: 'mars', endpoint: 'ftp://x/y', secretAccessKey: '', timeoutMs: -1 })
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError)
      problems = (e as ConfigError).problems
    }
    expect(problems).toEqual([
      'targets.s3.bucket: not a valid bucket name (3-63 lower-case letters, digits, "." and "-")',
      'targets.s3.region: not a region name such as "eu-west-1"',
      'targets.s3.endpoint: must be an http or https URL',
      'targets.s3.endpoint: must be an origin only, like https://s3.example.com:9000',
      'targets.s3.secret_access_key: required',
      'targets.s3.timeout_ms: must be a positive whole number of milliseconds',
    ])
    expect(() => target('s3', { bucket: 'my.bucket', endpoint: undefined, pathStyle: false })).toThrow(/path_style: must be true for a bucket name with dots over https/)
  })
})

describe('S3 compensation: put the object back as the premises recorded it', () => {
  async function committed(input: Awaited<ReturnType<typeof putInput>>) {
    const out = await sg.gate.submit(input)
    if (out.status !== 'committed') throw new Error(`${out.status}: ${JSON.stringify(out)}`)
    return { effect: toEffect(input), receipt: out.receipt }
  }
  async function undo(name: string, effect: Effect, receipt: JsonObject) {
    const comp = await sg.gate.target(name).compensation!(effect, receipt)
    return { comp, out: await sg.gate.submit({ thread: THREAD, target: name, ...comp }) }
  }

  it('a new object is deleted, on condition it is still the one the put wrote', async () => {
    const { effect, receipt } = await committed(await putInput({ key: 'new.txt', body: 'x' }))
    const { comp, out } = await undo('s3', effect, receipt)
    expect(comp).toEqual({ action: 'delete', args: { key: 'new.txt' }, premises: { exists: true, etag: receipt.etag } })
    expect(out).toMatchObject({ status: 'committed', receipt: { deleted: true } })
    expect(s3.current('docs', 'new.txt')).toBeUndefined()
    expect(s3.count('DELETE docs/new.txt')).toBe(1)
  })

  it('a small unversioned object it replaced is put back byte for byte, with its type and metadata', async () => {
    const was = s3.putDirect('docs', 'page.html', '<p>old</p>', { contentType: 'text/html', metadata: { owner: 'web' } })
    const input = await putInput({ key: 'page.html', body: '<p>new</p>' })
    expect(input.premises).toEqual({ exists: true, etag: was.etag, previous: { body_base64: Buffer.from('<p>old</p>').toString('base64'), content_type: 'text/html', metadata: { owner: 'web' } } })
    const { effect, receipt } = await committed(input)
    const { out } = await undo('s3', effect, receipt)
    expect(out.status).toBe('committed')
    const now = s3.current('docs', 'page.html')!
    expect([now.body.toString(), now.etag, now.contentType, now.metadata.owner]).toEqual(['<p>old</p>', was.etag, 'text/html', 'web'])
    expect(now.metadata['interlock-effect']).toBe(out.effectId)
  })

  it('a versioned object is restored from its version; the restore is found by query after a lost answer', async () => {
    const was = s3.putDirect('history', 'plan.md', '# v1', { contentType: 'text/markdown' })
    const { effect, receipt } = await committed(await putInput({ key: 'plan.md', body: '# v2' }, 's3v'))
    const comp = await sg.gate.target('s3v').compensation!(effect, receipt)
    expect(comp).toEqual({ action: 'restore', args: { key: 'plan.md', version_id: was.versionId }, premises: { exists: true, etag: receipt.etag } })
    const restore = toEffect({ thread: THREAD, target: 's3v', ...comp })
    await journalDispatched(sg.store, restore, 2)
    s3.fault({ mode: 'reset-after-apply', route: 'PUT /history/' })
    expect((await fault(sg.gate.target('s3v').apply(restore, first))).kind).toBe('unknown')
    const report = await (await sg.restart()).gate.recover()
    expect(report.effects[0]).toMatchObject({ action: 'found-by-query', outcome: { status: 'committed', receipt: { restored_version_id: was.versionId } } })
    expect(s3.current('history', 'plan.md')!.body.toString()).toBe('# v1')
    expect(s3.current('history', 'plan.md')!.contentType).toBe('text/markdown')
    expect(s3.count(restore.id)).toBe(1)
  })

  it('a delete on a versioned bucket is undone by restoring the version it removed', async () => {
    const was = s3.putDirect('history', 'gone.txt', 'keep me')
    const args = { key: 'gone.txt' }
    const input = { thread: THREAD, target: 's3v', action: 'delete', args, premises: await sg.gate.capture('s3v', 'delete', args) }
    const out = await sg.gate.submit(input)
    if (out.status !== 'committed') throw new Error(out.status)
    const { comp, out: back } = await undo('s3v', toEffect(input), out.receipt)
    expect(comp).toEqual({ action: 'restore', args: { key: 'gone.txt', version_id: was.versionId }, premises: { exists: false } })
    expect(back.status).toBe('committed')
    expect(s3.current('history', 'gone.txt')!.body.toString()).toBe('keep me')
  })

  it('is REJECTED when someone wrote the object after the effect; refused when nothing was recorded to restore', async () => {
    const { effect, receipt } = await committed(await putInput({ key: 'x.txt', body: 'ours' }))
    s3.putDirect('docs', 'x.txt', 'theirs')
    const { out } = await undo('s3', effect, receipt)
    expect(out).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('s3://docs/x.txt changed since the decision')] })
    expect(s3.current('docs', 'x.txt')!.body.toString()).toBe('theirs')

    const bare = toEffect({ thread: THREAD, target: 's3', action: 'put', args: { key: 'y.txt', body: 'b' } })
    const r = await sg.gate.target('s3').apply(bare, first)
    expect(() => (sg.gate.target('s3') as S3Target).compensation(bare, r)).toThrow(/recorded nothing about s3:\/\/docs\/y\.txt before it/)
  })
})
