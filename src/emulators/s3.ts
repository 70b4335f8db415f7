/**
 * An S3 emulator with the behaviour the s3 target relies on, as documented:
 *
 * - SigV4 header authentication, checked for real: the signature is
 *   recomputed from the request with the configured secret key (aws4fetch's
 *   signer over exactly the headers the request says it signed) and compared;
 *   a wrong key or any altered signed header is 403 SignatureDoesNotMatch, an
 *   unknown key id 403 InvalidAccessKeyId, a clock more than 15 minutes off 403
 *   RequestTimeTooSkewed, a body that does not hash to x-amz-content-sha256
 *   400 XAmzContentSHA256Mismatch.
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-auth-using-authorization-header.html
 * - PutObject: ETag = quoted MD5 of the body, user metadata from x-amz-meta-*,
 *   x-amz-version-id on a versioned bucket; conditional writes: If-None-Match: *
 *   on an existing key and If-Match on a different ETag are 412 PreconditionFailed,
 *   If-Match on a missing key 404 NoSuchKey.
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html
 *   https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
 * - HeadObject / GetObject (?versionId=, If-Match): metadata round-trip; 404 with no body for HEAD.
 *   A key whose current version is a delete marker answers 404 with
 *   `x-amz-delete-marker: true` and the marker's version id; a versionId that
 *   names a delete marker answers 405. Without s3:ListBucket (`deny()`), a key
 *   that does not exist answers 403 AccessDenied instead of 404: "If you don't
 *   have the s3:ListBucket permission, Amazon S3 returns an HTTP status code
 *   403 Forbidden error."
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html
 * - DeleteObject: 204, a delete marker on a versioned bucket; deleting a missing key is 204 too.
 *   Conditional deletes: If-Match with an ETag (or `*`) on the current version;
 *   a different ETag is 412 PreconditionFailed, no current object 404 NoSuchKey.
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html
 *   https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-deletes.html
 * - Concurrent conditional requests (`delayNext()` holds a write in flight):
 *   a conditional write or delete during which another write to the same key
 *   completed answers 409 ConditionalRequestConflict ("If a conflicting
 *   operation occurs during the upload S3 returns a 409
 *   ConditionalRequestConflict response"), or 404 NoSuchKey when that other
 *   write was a delete and the request was conditioned on If-Match ("If a
 *   concurrent delete request ... succeeds before a conditional write operation
 *   completes, you will receive a 404 Not Found response").
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html (If-Match, If-None-Match)
 *   https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
 *   https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-deletes.html
 * - ListObjectVersions (`GET /<bucket>?versions&prefix=`): versions and delete
 *   markers by key, newest first, `IsTruncated` / `NextKeyMarker` /
 *   `NextVersionIdMarker` paging; VersionId "null" on an unversioned bucket;
 *   403 AccessDenied without s3:ListBucketVersions.
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html
 * - HeadBucket: 403 without s3:ListBucket ("To use this operation, you must have
 *   permissions to perform the s3:ListBucket action").
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadBucket.html
 * - Errors as XML <Error><Code/><Message/></Error>.
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html
 * - Path-style (/bucket/key) and virtual-hosted (Host: bucket.<host>) addressing.
 *   https://docs.aws.amazon.com/AmazonS3/latest/userguide/VirtualHosting.html
 *
 * The ledger counts a put under the effect id in its x-amz-meta-interlock-effect;
 * a DeleteObject carries no effect id, so deletes are counted under
 * `DELETE <bucket>/<key>`.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { AwsV4Signer } from 'aws4fetch'
import { Emulator, type EmulatorRequest, type EmulatorResponse } from './emulator.js'

export interface S3Version {
  versionId: string | null
  body: Buffer
  etag: string
  contentType: string
  metadata: Record<string, string>
  deleteMarker: boolean
  lastModified: Date
}

interface Bucket {
  versioning: boolean
  objects: Map<string, S3Version[]>
}

/** The permissions the emulator can withhold from its one account (`deny()`). */
export type S3Permission = 's3:ListBucket' | 's3:ListBucketVersions'

const SKEW_MS = 15 * 60 * 1000

export class S3Emulator extends Emulator {
  readonly buckets = new Map<string, Bucket>()
  /** The emulator's clock, for skew checks. */
  clock: () => number = Date.now
  /** Host names `<bucket>.<suffix>` address a bucket virtual-hosted style (resolve them to 127.0.0.1 in the client). */
  virtualHostSuffix = 'localhost'
  /** Permissions the account's keys lack; everything else is allowed. */
  readonly denied = new Set<S3Permission>()
  private seq = 0
  /** Writes completed per `<bucket>/<key>`: a held conditional request compares it before and after. */
  private readonly writes = new Map<string, number>()
  private delays: { ms: number; during?: () => void }[] = []

  constructor(
    readonly accessKeyId = 'AKIAEMULATOR00000000',
    readonly secretAccessKey = 'emulatorSecretKey/0000000000000000000000000',
    readonly region = 'eu-west-1',
  ) {
    super()
  }

  createBucket(name: string, opts: { versioning?: boolean } = {}): this {
    this.buckets.set(name, { versioning: opts.versioning ?? false, objects: new Map() })
    return this
  }

  /** Another writer puts an object (no signature, no ledger). */
  putDirect(bucket: string, key: string, body: string | Buffer, opts: { contentType?: string; metadata?: Record<string, string> } = {}): S3Version {
    return this.store(bucket, key, Buffer.from(body), opts.contentType ?? 'binary/octet-stream', opts.metadata ?? {})
  }

  /** Another writer deletes an object (no signature, no ledger): a delete marker on a versioned bucket. */
  deleteDirect(bucket: string, key: string): void {
    const b = this.buckets.get(bucket)
    if (!b) throw new Error(`no bucket ${bucket}`)
    this.erase(bucket, b, key)
  }

  /** The account's keys lose these permissions (IAM, or a bucket policy). */
  deny(...permissions: S3Permission[]): this {
    for (const p of permissions) this.denied.add(p)
    return this
  }

  /**
   * The next PUT or DELETE of an object is held this long before S3 evaluates and applies it; `during` runs
   * once it is held (another writer's request landing while ours is in flight), so a test's concurrency does
   * not depend on how soon the request arrives on a loaded machine.
   */
  delayNext(ms: number, during?: () => void): void {
    this.delays.push({ ms, during })
  }

  /** The current object at a key, or undefined when there is none (or a delete marker). */
  current(bucket: string, key: string): S3Version | undefined {
    const latest = this.buckets.get(bucket)?.objects.get(key)?.at(-1)
    return latest && !latest.deleteMarker ? latest : undefined
  }

  versions(bucket: string, key: string): S3Version[] {
    return this.buckets.get(bucket)?.objects.get(key) ?? []
  }

  protected async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    const denied = await this.authenticate(req)
    if (denied) return denied
    const at = this.address(req)
    // HeadBucket, `interlock check`'s probe (https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadBucket.html):
    // 200 when the bucket exists and the caller may list it, 404 when it does not; a HEAD answer has no body.
    if (!at && req.method === 'HEAD') {
      if (!this.buckets.has(this.bucketOf(req))) return { status: 404 }
      return { status: this.denied.has('s3:ListBucket') ? 403 : 200 }
    }
    if (!at && req.method === 'GET' && req.query.has('versions')) return this.listVersions(req)
    if (!at) return error(400, 'InvalidRequest', 'Bucket-level operations are not emulated.')
    const bucket = this.buckets.get(at.bucket)
    if (!bucket) return error(404, 'NoSuchBucket', 'The specified bucket does not exist')
    switch (req.method) {
      case 'HEAD':
      case 'GET':
        return this.read(req, bucket, at.key)
      case 'PUT':
        return this.put(req, at.bucket, at.key)
      case 'DELETE':
        return this.remove(req, at.bucket, bucket, at.key)
      default:
        return error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.')
    }
  }

  private read(req: EmulatorRequest, bucket: Bucket, key: string): EmulatorResponse {
    const head = req.method === 'HEAD'
    const versionId = req.query.get('versionId')
    const all = bucket.objects.get(key) ?? []
    const v = versionId ? all.find((x) => x.versionId === versionId) : all.at(-1)
    if (!v && !versionId && this.denied.has('s3:ListBucket')) {
      // Without s3:ListBucket, S3 will not say whether a key exists: 403, not 404 (API_HeadObject.html, "Permissions").
      return head ? { status: 403 } : error(403, 'AccessDenied', 'Access Denied')
    }
    if (v?.deleteMarker) {
      const marker = { 'x-amz-delete-marker': 'true', 'x-amz-version-id': v.versionId! }
      // A versionId naming a delete marker is 405; the current version being one is 404 (API_GetObject.html).
      if (versionId) return head ? { status: 405, headers: marker } : { ...error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.'), headers: { ...marker, 'content-type': 'application/xml' } }
      return head ? { status: 404, headers: marker } : { ...error(404, 'NoSuchKey', 'The specified key does not exist.'), headers: { ...marker, 'content-type': 'application/xml' } }
    }
    if (!v) {
      return head ? { status: 404 } : versionId ? error(404, 'NoSuchVersion', 'The specified version does not exist.') : error(404, 'NoSuchKey', 'The specified key does not exist.')
    }
    const ifMatch = req.headers['if-match']
    if (ifMatch !== undefined && ifMatch !== v.etag) return head ? { status: 412 } : error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold')
    const headers: Record<string, string> = {
      etag: v.etag,
      'content-type': v.contentType,
      'content-length': String(v.body.length),
      'last-modified': v.lastModified.toUTCString(),
    }
    if (v.versionId) headers['x-amz-version-id'] = v.versionId
    for (const [k, val] of Object.entries(v.metadata)) headers[`x-amz-meta-${k}`] = val
    return { status: 200, headers, body: head ? undefined : v.body }
  }

  private async put(req: EmulatorRequest, name: string, key: string): Promise<EmulatorResponse> {
    if (req.headers['x-amz-copy-source']) return error(501, 'NotImplemented', 'CopyObject is not emulated.')
    const ifNoneMatch = req.headers['if-none-match']
    const ifMatch = req.headers['if-match']
    if (ifNoneMatch !== undefined && ifNoneMatch !== '*') return error(501, 'NotImplemented', 'A header you provided implies functionality that is not implemented')
    const conflict = await this.hold(name, key, ifMatch !== undefined || ifNoneMatch !== undefined, ifMatch !== undefined)
    if (conflict) return conflict
    const existing = this.current(name, key)
    if (ifNoneMatch === '*' && existing) return error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold')
    if (ifMatch !== undefined && !existing) return error(404, 'NoSuchKey', 'The specified key does not exist.')
    if (ifMatch !== undefined && ifMatch !== existing!.etag) return error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold')
    const metadata: Record<string, string> = {}
    for (const [k, v] of Object.entries(req.headers)) if (k.startsWith('x-amz-meta-') && typeof v === 'string') metadata[k.slice('x-amz-meta-'.length)] = v
    const contentType = typeof req.headers['content-type'] === 'string' ? req.headers['content-type'] : 'binary/octet-stream'
    const v = await this.apply(req, metadata['interlock-effect'], () => this.store(name, key, req.raw, contentType, metadata))
    return { status: 200, headers: { etag: v.etag, ...(v.versionId ? { 'x-amz-version-id': v.versionId } : {}) } }
  }

  private async remove(req: EmulatorRequest, name: string, bucket: Bucket, key: string): Promise<EmulatorResponse> {
    const ifMatch = header(req, 'if-match')
    const conflict = await this.hold(name, key, ifMatch !== undefined, false)
    if (conflict) return conflict
    if (ifMatch !== undefined) {
      // Conditional deletes evaluate the current version only (conditional-deletes.html).
      const existing = this.current(name, key)
      if (!existing) return error(404, 'NoSuchKey', 'The specified key does not exist.')
      if (ifMatch !== '*' && ifMatch !== existing.etag) return error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold')
    }
    const marker = await this.apply(req, `DELETE ${name}/${key}`, () => this.erase(name, bucket, key))
    return { status: 204, headers: marker ? { 'x-amz-delete-marker': 'true', 'x-amz-version-id': marker.versionId! } : {} }
  }

  private erase(name: string, bucket: Bucket, key: string): S3Version | null {
    this.wrote(name, key)
    if (!bucket.versioning) {
      bucket.objects.delete(key)
      return null
    }
    const m: S3Version = { versionId: this.versionId(), body: Buffer.alloc(0), etag: '', contentType: '', metadata: {}, deleteMarker: true, lastModified: new Date(this.clock()) }
    bucket.objects.set(key, [...(bucket.objects.get(key) ?? []), m])
    return m
  }

  /**
   * Holds a write armed by delayNext(). A conditional one during which another
   * write to the key completed is answered as S3 answers it: 404 NoSuchKey when
   * it rested on If-Match and the key is gone now, else 409 ConditionalRequestConflict.
   */
  private async hold(name: string, key: string, conditional: boolean, ifMatch: boolean): Promise<EmulatorResponse | null> {
    const delay = this.delays.shift()
    if (!delay) return null
    const before = this.writes.get(`${name}/${key}`) ?? 0
    await new Promise((r) => setTimeout(r, delay.ms))
    delay.during?.()
    if (!conditional || (this.writes.get(`${name}/${key}`) ?? 0) === before) return null
    if (ifMatch && !this.current(name, key)) return error(404, 'NoSuchKey', 'The specified key does not exist.')
    return error(409, 'ConditionalRequestConflict', 'A conflicting conditional operation is currently in progress against this resource. Please try again.')
  }

  private wrote(name: string, key: string): void {
    this.writes.set(`${name}/${key}`, (this.writes.get(`${name}/${key}`) ?? 0) + 1)
  }

  /** ListObjectVersions for one bucket: every key under the prefix, versions newest first. */
  private listVersions(req: EmulatorRequest): EmulatorResponse {
    const name = this.bucketOf(req)
    const bucket = this.buckets.get(name)
    if (!bucket) return error(404, 'NoSuchBucket', 'The specified bucket does not exist')
    if (this.denied.has('s3:ListBucketVersions')) return error(403, 'AccessDenied', 'Access Denied')
    const prefix = req.query.get('prefix') ?? ''
    const maxKeys = Math.min(1000, Math.max(1, Number(req.query.get('max-keys') ?? 1000)))
    const keyMarker = req.query.get('key-marker') ?? ''
    const versionMarker = req.query.get('version-id-marker') ?? ''
    const entries: { key: string; v: S3Version; latest: boolean }[] = []
    for (const key of [...bucket.objects.keys()].filter((k) => k.startsWith(prefix)).sort()) {
      const all = bucket.objects.get(key)!
      for (let i = all.length - 1; i >= 0; i--) entries.push({ key, v: all[i]!, latest: i === all.length - 1 })
    }
    let start = 0
    if (keyMarker) {
      const at = versionMarker ? entries.findIndex((e) => e.key === keyMarker && (e.v.versionId ?? 'null') === versionMarker) : -1
      start = at >= 0 ? at + 1 : entries.findIndex((e) => e.key > keyMarker)
      if (start < 0) start = entries.length
    }
    const page = entries.slice(start, start + maxKeys)
    const truncated = start + maxKeys < entries.length
    const last = page.at(-1)
    const items = page.map(({ key, v, latest }) => {
      const common = `<Key>${escapeXml(key)}</Key><VersionId>${v.versionId ?? 'null'}</VersionId><IsLatest>${latest}</IsLatest><LastModified>${v.lastModified.toISOString()}</LastModified>`
      return v.deleteMarker
        ? `<DeleteMarker>${common}</DeleteMarker>`
        : `<Version>${common}<ETag>${escapeXml(v.etag)}</ETag><Size>${v.body.length}</Size><StorageClass>STANDARD</StorageClass></Version>`
    })
    const next = truncated && last ? `<NextKeyMarker>${escapeXml(last.key)}</NextKeyMarker><NextVersionIdMarker>${last.v.versionId ?? 'null'}</NextVersionIdMarker>` : ''
    const xml =
      `<?xml version="1.0" encoding="UTF-8"?>\n<ListVersionsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${name}</Name><Prefix>${escapeXml(prefix)}</Prefix>` +
      `<KeyMarker>${escapeXml(keyMarker)}</KeyMarker><VersionIdMarker>${escapeXml(versionMarker)}</VersionIdMarker><MaxKeys>${maxKeys}</MaxKeys><IsTruncated>${truncated}</IsTruncated>${next}${items.join('')}</ListVersionsResult>`
    return { status: 200, headers: { 'content-type': 'application/xml' }, body: xml }
  }

  private store(name: string, key: string, body: Buffer, contentType: string, metadata: Record<string, string>): S3Version {
    const bucket = this.buckets.get(name)
    if (!bucket) throw new Error(`no bucket ${name}`)
    this.wrote(name, key)
    const v: S3Version = {
      versionId: bucket.versioning ? this.versionId() : null,
      body,
      etag: `"${createHash('md5').update(body).digest('hex')}"`,
      contentType,
      metadata,
      deleteMarker: false,
      lastModified: new Date(this.clock()),
    }
    bucket.objects.set(key, bucket.versioning ? [...(bucket.objects.get(key) ?? []), v] : [v])
    return v
  }

  private versionId(): string {
    return createHash('sha256').update(`version\0${++this.seq}`).digest('base64url').slice(0, 32)
  }

  /** The bucket a bucket-level request names: the host's first label when virtual-hosted, else the first path segment. */
  private bucketOf(req: EmulatorRequest): string {
    const hostname = String(req.headers.host ?? '').replace(/:\d+$/, '')
    if (hostname.endsWith(`.${this.virtualHostSuffix}`)) return hostname.slice(0, -this.virtualHostSuffix.length - 1)
    return decodeURIComponent(req.path.split('/')[1] ?? '')
  }

  /** Path-style `/bucket/key`, or virtual-hosted `Host: <bucket>.<virtualHostSuffix>` with `/key`. */
  private address(req: EmulatorRequest): { bucket: string; key: string } | null {
    const hostname = String(req.headers.host ?? '').replace(/:\d+$/, '')
    const segments = req.path.split('/').slice(1).map(decodeURIComponent)
    if (hostname.endsWith(`.${this.virtualHostSuffix}`)) {
      const key = segments.join('/')
      return key ? { bucket: hostname.slice(0, -this.virtualHostSuffix.length - 1), key } : null
    }
    const [bucket, ...rest] = segments
    const key = rest.join('/')
    return bucket && key ? { bucket, key } : null
  }

  private async authenticate(req: EmulatorRequest): Promise<EmulatorResponse | null> {
    const auth = req.headers.authorization
    if (!auth) return error(403, 'AccessDenied', 'Access Denied')
    const m = auth.match(/^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/)
    if (!m) return error(400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed.')
    const [, keyId, day, region, signedHeaders, signature] = m as unknown as [string, string, string, string, string, string]
    if (keyId !== this.accessKeyId) return error(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.')
    if (region !== this.region) return error(400, 'AuthorizationHeaderMalformed', `The authorization header is malformed; the region '${region}' is wrong; expecting '${this.region}'`)
    const amzDate = header(req, 'x-amz-date')
    const at = amzDate?.match(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/)
    if (!amzDate || !at || !amzDate.startsWith(day)) return error(403, 'AccessDenied', 'X-Amz-Date is missing or does not match the credential scope.')
    const sent = Date.UTC(+at[1]!, +at[2]! - 1, +at[3]!, +at[4]!, +at[5]!, +at[6]!)
    if (Math.abs(sent - this.clock()) > SKEW_MS) return error(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.')
    const payload = header(req, 'x-amz-content-sha256')
    if (!payload) return error(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256')
    if (payload !== 'UNSIGNED-PAYLOAD' && payload !== createHash('sha256').update(req.raw).digest('hex')) {
      return error(400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.")
    }
    const names = signedHeaders.split(';')
    if (!names.includes('host') || !names.includes('x-amz-date')) return error(403, 'SignatureDoesNotMatch', 'host and x-amz-date must be signed.')
    const headers: Record<string, string> = {}
    for (const n of names) {
      if (n === 'host') continue
      const v = header(req, n)
      if (v === undefined) return mismatch()
      headers[n] = v
    }
    const search = req.query.toString()
    const signer = new AwsV4Signer({
      method: req.method,
      url: `http://${req.headers.host}${req.path}${search ? `?${search}` : ''}`,
      headers,
      accessKeyId: keyId,
      secretAccessKey: this.secretAccessKey,
      service: 's3',
      region,
      datetime: amzDate,
      allHeaders: true,
    })
    if (signer.signedHeaders !== signedHeaders) return mismatch()
    const expected = Buffer.from(await signer.signature())
    return expected.length === signature.length && timingSafeEqual(expected, Buffer.from(signature)) ? null : mismatch()
  }
}

function header(req: EmulatorRequest, name: string): string | undefined {
  const v = req.headers[name]
  return Array.isArray(v) ? v.join(',') : v
}

function mismatch(): EmulatorResponse {
  return error(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.')
}

function error(status: number, code: string, message: string): EmulatorResponse {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message><RequestId>EMULATOR</RequestId></Error>`
  return { status, headers: { 'content-type': 'application/xml' }, body: xml }
}

function escapeXml(s: string): string {
  return s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!)
}
