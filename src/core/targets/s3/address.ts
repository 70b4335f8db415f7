/**
 * Where an object lives on the wire: the bucket, the region's endpoint (or a
 * configured one: MinIO, R2, a test emulator), path-style or virtual-hosted.
 *
 *   virtual-hosted (default): https://<bucket>.s3.<region>.amazonaws.com/<key>
 *   path-style:               https://s3.<region>.amazonaws.com/<bucket>/<key>
 *
 * Keys are encoded one segment at a time (RFC 3986, "/" kept), the form SigV4
 * signs. A key with "." or ".." segments is refused: URL parsing would
 * silently collapse it and write somewhere else.
 *
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/VirtualHosting.html
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html
 */
import { InputError } from '../../errors.js'

export interface S3Location {
  bucket: string
  region: string
  /** An origin such as http://127.0.0.1:9000; default https://s3.<region>.amazonaws.com. */
  endpoint?: string
  pathStyle: boolean
}

const BUCKET = /^(?!xn--)(?!sthree-)(?!.*\.\.)(?!\d+\.\d+\.\d+\.\d+$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/
const REGION = /^[a-z]{2}(-[a-z0-9]+)+$|^auto$/

export function objectUrl(loc: S3Location, key: string, query: Record<string, string> = {}): string {
  const base = new URL(loc.endpoint ?? `https://s3.${loc.region}.amazonaws.com`)
  const search = Object.keys(query).length > 0 ? `?${new URLSearchParams(query)}` : ''
  if (loc.pathStyle) return `${base.origin}/${loc.bucket}/${encodeKey(key)}${search}`
  return `${base.protocol}//${loc.bucket}.${base.host}/${encodeKey(key)}${search}`
}

/** The bucket itself, for HeadBucket: `HEAD /<bucket>` path-style, `HEAD /` on the bucket's host otherwise. */
export function bucketUrl(loc: S3Location): string {
  const base = new URL(loc.endpoint ?? `https://s3.${loc.region}.amazonaws.com`)
  return loc.pathStyle ? `${base.origin}/${loc.bucket}` : `${base.protocol}//${loc.bucket}.${base.host}/`
}

export function encodeKey(key: string): string {
  return key
    .split('/')
    .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/')
}

export function checkKey(action: string, key: unknown): string {
  if (typeof key !== 'string' || key === '' || Buffer.byteLength(key) > 1024) {
    throw new InputError(`${action}: key must be an object key of 1 to 1024 bytes (got ${JSON.stringify(key)})`)
  }
  if (/[\x00-\x1f\x7f]/.test(key)) throw new InputError(`${action}: key may not contain control characters`)
  if (key.split('/').some((s) => s === '.' || s === '..')) throw new InputError(`${action}: key may not have "." or ".." segments (${JSON.stringify(key)})`)
  return key
}

/** Problems with the location, each naming its config key; [] when it is usable. */
export function locationProblems(prefix: string, loc: S3Location): string[] {
  const problems: string[] = []
  if (!BUCKET.test(loc.bucket ?? '')) problems.push(`${prefix}.bucket: not a valid bucket name (3-63 lower-case letters, digits, "." and "-")`)
  if (!REGION.test(loc.region ?? '')) problems.push(`${prefix}.region: not a region name such as "eu-west-1"`)
  let protocol = 'https:'
  if (loc.endpoint !== undefined) {
    try {
      const u = new URL(loc.endpoint)
      protocol = u.protocol
      if (u.protocol !== 'http:' && u.protocol !== 'https:') problems.push(`${prefix}.endpoint: must be an http or https URL`)
      if ((u.pathname !== '/' && u.pathname !== '') || u.search || u.hash || u.username) problems.push(`${prefix}.endpoint: must be an origin only, like https://s3.example.com:9000`)
    } catch {
      problems.push(`${prefix}.endpoint: not a URL`)
    }
  }
  // A dotted bucket as a host name does not match the endpoint's TLS certificate.
  if (!loc.pathStyle && protocol === 'https:' && loc.bucket?.includes('.')) {
    problems.push(`${prefix}.path_style: must be true for a bucket name with dots over https`)
  }
  return problems
}
