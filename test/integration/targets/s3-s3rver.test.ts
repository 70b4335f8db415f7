/**
 * The S3 target against s3rver, an S3 implementation written by others, so the
 * emulator in test/emulators/s3.ts is not the only thing that agrees with us.
 *
 * What s3rver 3.7.1 does not do, and so is tested against the emulator only:
 * - it accepts a SigV4 signature without checking it (its own source:
 *   "Signature version 4 calculation is unimplemented"); it does check that
 *   the access key id exists. s3.test.ts checks our signature against AWS's
 *   documented example instead;
 * - it ignores If-None-Match / If-Match on PutObject (S3's conditional writes,
 *   2024): the write goes through. Here the gate's own premise check is what
 *   refuses a changed object; the pushed-down 412 is tested on the emulator;
 * - it ignores If-Match on DeleteObject (S3's conditional deletes, 2025): the
 *   compensation's delete goes through unconditioned here; the 412 on a
 *   changed object is tested on the emulator;
 * - no versioning, so no restore from a version, and a query that meets
 *   another writer's object can only say it cannot know.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AwsClient } from 'aws4fetch'
import S3rver from 's3rver'
import { afterAll, beforeAll, beforeEach, afterEach, describe, expect, it } from 'vitest'
import type { JsonObject } from '../../../src/core/canonical-json.js'
import { toEffect } from '../../../src/core/effect.js'
import { DispatchFault } from '../../../src/core/errors.js'
import { S3Target } from '../../../src/core/targets/s3/index.js'
import { sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'

const BUCKET = 'cross-check'
const THREAD = 'agent-1'
let dir: string
let server: { run(): Promise<{ port: number }>; close(): Promise<void> }
let endpoint: string
let sg: SqliteGate
// s3rver's built-in account.
const raw = new AwsClient({ accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', service: 's3', region: 'us-east-1', retries: 0 })

function target(accessKeyId = 'S3RVER'): S3Target {
  return new S3Target('s3r', { bucket: BUCKET, region: 'us-east-1', accessKeyId, secretAccessKey: 'S3RVER', endpoint, pathStyle: true, timeoutMs: 2000, connectTimeoutMs: 1000 })
}

/** Reads an object past the target, with s3rver's own answer as the witness. */
async function rawGet(key: string) {
  const res = await raw.fetch(`${endpoint}/${BUCKET}/${key}`)
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: Object.fromEntries(res.headers) }
}

async function rawPut(key: string, body: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await raw.fetch(`${endpoint}/${BUCKET}/${key}`, { method: 'PUT', body, headers })
  expect(res.status).toBe(200)
  return res.headers.get('etag')!
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-s3rver-'))
  server = new S3rver({ port: 0, address: '127.0.0.1', directory: dir, silent: true, configureBuckets: [{ name: BUCKET }] })
  endpoint = `http://127.0.0.1:${(await server.run()).port}`
})
afterAll(async () => {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
})
beforeEach(async () => {
  sg = await sqliteGate(() => [target()])
})
afterEach(async () => {
  await sg.cleanup()
})

async function putInput(args: JsonObject) {
  return { thread: THREAD, target: 's3r', action: 'put', args, premises: await sg.gate.capture('s3r', 'put', args) }
}

describe('S3 target against s3rver', () => {
  it('put: the bytes, content type, user metadata and effect id arrive; the ETag is S3\'s; query finds it by HeadObject', async () => {
    const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 10])
    const input = await putInput({ key: 'bin/data.bin', body: bytes.toString('base64'), encoding: 'base64', content_type: 'application/x-test', metadata: { source: 'agent' } })
    expect(input.premises).toEqual({ exists: false })
    const out = await sg.gate.submit(input)
    expect(out.status).toBe('committed')
    if (out.status !== 'committed') return

    const got = await rawGet('bin/data.bin')
    expect(got.status).toBe(200)
    expect(got.body.equals(bytes)).toBe(true)
    expect(got.headers['content-type']).toBe('application/x-test')
    expect(got.headers['x-amz-meta-source']).toBe('agent')
    expect(got.headers['x-amz-meta-interlock-effect']).toBe(out.effectId)
    expect(out.receipt).toEqual({ bucket: BUCKET, key: 'bin/data.bin', etag: got.headers.etag })

    const t = sg.gate.target('s3r')
    expect(await t.query!(toEffect(input))).toEqual(out.receipt)
    // Another effect on the same key, decided on the same "no object": the object there now is not its own and not
    // what it saw, and s3rver keeps no versions, so whether it landed first cannot be known. Not "not found".
    const other = toEffect({ ...input, args: { ...input.args, body: Buffer.from('other').toString('base64') } })
    const unknowable = await t.query!(other).catch((e: unknown) => e)
    expect(unknowable).toBeInstanceOf(DispatchFault)
    expect(unknowable).toMatchObject({ kind: 'unknowable', message: expect.stringContaining('the bucket is not versioned') })
  })

  it('a key with spaces, non-ASCII and reserved characters is addressed as s3rver decodes it', async () => {
    const key = "dir/ü (1)!*'~+&=.txt"
    const out = await sg.gate.submit(await putInput({ key, body: 'odd' }))
    expect(out.status).toBe('committed')
    const res = await raw.fetch(`${endpoint}/${BUCKET}/${key.split('/').map(encodeURIComponent).join('/')}`)
    expect(await res.text()).toBe('odd')
  })

  it('capture and validatePremises read the object with HeadObject: a change after the decision is REJECTED', async () => {
    const etag = await rawPut('notes.txt', 'v1', { 'content-type': 'text/plain', 'x-amz-meta-owner': 'ops' })
    const input = await putInput({ key: 'notes.txt', body: 'agent edit' })
    expect(input.premises).toEqual({ exists: true, etag, previous: { body_base64: Buffer.from('v1').toString('base64'), content_type: 'text/plain', metadata: { owner: 'ops' } } })
    const changed = await rawPut('notes.txt', 'v2 by a person')
    const out = await sg.gate.submit(input)
    expect(out).toMatchObject({ status: 'rejected', violations: [`s3://${BUCKET}/notes.txt changed since the decision (ETag was ${etag}, now ${changed})`] })
    expect((await rawGet('notes.txt')).body.toString()).toBe('v2 by a person')
  })

  it('If-None-Match: s3rver does not enforce it on PutObject, so the gate\'s own check is what rejects an object that appeared', async () => {
    const input = await putInput({ key: 'fresh.txt', body: 'mine' })
    await rawPut('fresh.txt', 'theirs')
    expect(await sg.gate.submit(input)).toMatchObject({ status: 'rejected', violations: [expect.stringContaining('exists now')] })
    expect((await rawGet('fresh.txt')).body.toString()).toBe('theirs')

    // Sent straight to s3rver, the pushed-down condition is not honoured (S3 and the emulator answer 412).
    const receipt = await sg.gate.target('s3r').apply(toEffect({ ...input, key: 'direct' }), { attempt: 1, recovering: false })
    expect(receipt.etag).toBeDefined()
    expect((await rawGet('fresh.txt')).body.toString()).toBe('mine')
  })

  it('compensation: a new object is deleted, a replaced one is put back with its bytes, type and metadata', async () => {
    const created = await sg.gate.submit(await putInput({ key: 'made.txt', body: 'temporary' }))
    const before = await rawPut('kept.txt', 'original', { 'content-type': 'text/plain', 'x-amz-meta-owner': 'ops' })
    const replaced = await sg.gate.submit(await putInput({ key: 'kept.txt', body: 'replacement' }))
    if (created.status !== 'committed' || replaced.status !== 'committed') throw new Error('setup failed')
    const t = sg.gate.target('s3r')

    for (const [key, out] of [['made.txt', created], ['kept.txt', replaced]] as const) {
      const history = await sg.store.history(out.effectId)
      const effect = (history[0]!.data.effect as unknown) as Parameters<typeof toEffect>[0]
      const comp = await t.compensation!(toEffect(effect), out.receipt)
      const undone = await sg.gate.submit({ thread: THREAD, target: 's3r', ...comp })
      expect(undone.status, key).toBe('committed')
      if (undone.status === 'committed') expect(await t.query!(toEffect({ thread: THREAD, target: 's3r', ...comp }))).toEqual(undone.receipt)
    }
    expect((await rawGet('made.txt')).status).toBe(404)
    const kept = await rawGet('kept.txt')
    expect([kept.body.toString(), kept.headers.etag, kept.headers['content-type'], kept.headers['x-amz-meta-owner']]).toEqual(['original', before, 'text/plain', 'ops'])
  })

  it('an access key id s3rver does not know: 403 InvalidAccessKeyId, refused', async () => {
    const t = target('AKIAUNKNOWN000000000')
    try {
      const e = await t.apply(toEffect({ thread: THREAD, target: 's3r', action: 'put', args: { key: 'no.txt', body: 'x' } }), { attempt: 1, recovering: false }).catch((err: unknown) => err)
      expect(e).toBeInstanceOf(DispatchFault)
      expect((e as DispatchFault).kind).toBe('refused')
      expect((e as DispatchFault).message).toContain('InvalidAccessKeyId')
      expect((e as DispatchFault).message).not.toContain('AKIAUNKNOWN000000000')
    } finally {
      await t.close()
    }
    expect((await rawGet('no.txt')).status).toBe(404)
  })
})
