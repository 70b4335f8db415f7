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
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html
 * - DeleteObject: 204, a delete marker on a versioned bucket; deleting a missing key is 204 too.
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html
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

const SKEW_MS = 15 * 60 * 1000

export class S3Emulator extends Emulator {
  readonly buckets = new Map<string, Bucket>()
  /** The emulator's clock, for skew checks. */
  clock: () => number = Date.now
  /** Host names `<bucket>.<suffix>` address a bucket virtual-hosted style (resolve them to 127.0.0.1 in the client). */
  virtualHostSuffix = 'localhost'
  private seq = 0

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
    if (!at && req.method === 'HEAD') return { status: this.buckets.has(this.bucketOf(req)) ? 200 : 404 }
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
    if (!v || (!versionId && v.deleteMarker)) {
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
    const existing = this.current(name, key)
    const ifNoneMatch = req.headers['if-none-match']
    const ifMatch = req.headers['if-match']
    if (ifNoneMatch !== undefined && ifNoneMatch !== '*') return error(501, 'NotImplemented', 'A header you provided implies functionality that is not implemented')
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
    const marker = await this.apply(req, `DELETE ${name}/${key}`, () => {
      if (!bucket.versioning) {
        bucket.objects.delete(key)
        return null
      }
      const m: S3Version = { versionId: this.versionId(), body: Buffer.alloc(0), etag: '', contentType: '', metadata: {}, deleteMarker: true, lastModified: new Date(this.clock()) }
      bucket.objects.set(key, [...(bucket.objects.get(key) ?? []), m])
      return m
    })
    return { status: 204, headers: marker ? { 'x-amz-delete-marker': 'true', 'x-amz-version-id': marker.versionId! } : {} }
  }

  private store(name: string, key: string, body: Buffer, contentType: string, metadata: Record<string, string>): S3Version {
    const bucket = this.buckets.get(name)
    if (!bucket) throw new Error(`no bucket ${name}`)
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
