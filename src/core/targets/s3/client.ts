/**
 * The four S3 object calls the target makes, each signed with SigV4 by
 * aws4fetch's AwsV4Signer and sent through the Transport (timeouts, fault
 * classes, secrets scrubbed). The payload is signed too (its SHA-256 in
 * x-amz-content-sha256), so a body altered on the way is refused by S3.
 * Callers decide what a status means.
 *
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html
 */
import { AwsV4Signer } from 'aws4fetch'
import { sha256Hex } from '../../hash.js'
import { bucketUrl, objectUrl, type S3Location } from './address.js'
import { Transport, type HttpResponse, type TransportOptions, type TransportSettings } from './transport.js'
import type { Fence, RequestGuard } from '../http/fence.js'

export interface S3Credentials {
  accessKeyId: string
  secretAccessKey: string
  /** For temporary credentials (STS). */
  sessionToken?: string
}

export interface S3ClientOptions extends TransportOptions {
  /** Signing time; default Date.now. */
  now?: () => number
}

interface Call {
  query?: Record<string, string>
  headers?: Record<string, string>
  body?: Buffer
  signal?: AbortSignal
  fence?: Fence
  limit?: number
}

export class S3Client {
  private readonly transport: Transport
  private readonly now: () => number

  constructor(
    name: string,
    readonly location: S3Location,
    private readonly credentials: S3Credentials,
    settings: TransportSettings,
    options: S3ClientOptions = {},
  ) {
    const secrets = [credentials.secretAccessKey, credentials.sessionToken ?? '', credentials.accessKeyId, ...(options.secrets ?? [])]
    this.transport = new Transport(name, settings, { ...options, secrets })
    this.now = options.now ?? Date.now
  }

  head(key: string, opts: { versionId?: string } = {}): Promise<HttpResponse> {
    return this.call('HEAD', key, { query: opts.versionId ? { versionId: opts.versionId } : {} })
  }

  get(key: string, opts: { versionId?: string; ifMatch?: string; limit?: number; signal?: AbortSignal } = {}): Promise<HttpResponse> {
    return this.call('GET', key, {
      query: opts.versionId ? { versionId: opts.versionId } : {},
      headers: opts.ifMatch ? { 'if-match': opts.ifMatch } : {},
      limit: opts.limit,
      signal: opts.signal,
    })
  }

  /** A write: `guard` carries the apply's abort signal and fence (../http/fence.ts). */
  put(key: string, body: Buffer, headers: Record<string, string>, guard: RequestGuard = {}): Promise<HttpResponse> {
    return this.call('PUT', key, { headers, body, signal: guard.signal, fence: guard.fence })
  }

  /** `ifMatch`: a conditional delete (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-deletes.html). */
  delete(key: string, guard: RequestGuard = {}, opts: { ifMatch?: string } = {}): Promise<HttpResponse> {
    return this.call('DELETE', key, { headers: opts.ifMatch ? { 'if-match': opts.ifMatch } : {}, signal: guard.signal, fence: guard.fence })
  }

  /** One page of ListObjectVersions under `prefix`, from the markers of the page before. */
  listVersions(prefix: string, after: { keyMarker?: string; versionIdMarker?: string } = {}): Promise<HttpResponse> {
    const query: Record<string, string> = { versions: '', prefix, 'max-keys': '1000' }
    if (after.keyMarker !== undefined) query['key-marker'] = after.keyMarker
    if (after.versionIdMarker !== undefined) query['version-id-marker'] = after.versionIdMarker
    return this.signed('GET', `${bucketUrl(this.location)}?${new URLSearchParams(query)}`)
  }

  /** HeadBucket, for `interlock check` (https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadBucket.html). */
  headBucket(signal?: AbortSignal): Promise<HttpResponse> {
    return this.signed('HEAD', bucketUrl(this.location), { signal })
  }

  where(method: string): string {
    return this.transport.where(method, objectUrl(this.location, 'x'))
  }

  close(): Promise<void> {
    return this.transport.close()
  }

  private call(method: string, key: string, c: Call = {}): Promise<HttpResponse> {
    return this.signed(method, objectUrl(this.location, key, c.query), c)
  }

  private async signed(method: string, url: string, c: Call = {}): Promise<HttpResponse> {
    const signer = new AwsV4Signer({
      method,
      url,
      headers: { ...c.headers, 'x-amz-content-sha256': sha256Hex(c.body ?? '') },
      accessKeyId: this.credentials.accessKeyId,
      secretAccessKey: this.credentials.secretAccessKey,
      sessionToken: this.credentials.sessionToken,
      service: 's3',
      region: this.location.region,
      datetime: new Date(this.now()).toISOString().replace(/[:-]|\.\d{3}/g, ''),
    })
    const signed = await signer.sign()
    const headers: Record<string, string> = {}
    signed.headers.forEach((v, k) => (headers[k] = v))
    return this.transport.send({ method, url, headers, body: c.body, signal: c.signal, fence: c.fence, limit: c.limit })
  }
}
