/**
 * The history of one key in a versioned bucket: its versions and delete
 * markers, newest first, read with ListObjectVersions
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html).
 *
 * The listing is by prefix, so it holds every key that starts with ours; ours
 * sorts first, and the walk stops at the first other key. Entries are ordered
 * by LastModified (newest first) rather than trusted to arrive interleaved.
 * Listing needs s3:ListBucketVersions: without it the history cannot be read,
 * which is a TargetError with context.code 'AccessDenied' (premises.ts's
 * isAccessDenied).
 */
import { TargetError } from '../../errors.js'
import type { S3Client } from './client.js'
import { s3Error } from './faults.js'
import { describe } from './premises.js'

export interface HistoryEntry {
  versionId: string
  deleteMarker: boolean
  /** Versions only. */
  etag?: string
  lastModified: number
}

/** Pages read at most (1000 entries each): a key rewritten more often than this is not one to search by hand. */
const MAX_PAGES = 5

export async function keyHistory(client: S3Client, key: string): Promise<HistoryEntry[]> {
  const entries: (HistoryEntry & { order: number })[] = []
  let after: { keyMarker?: string; versionIdMarker?: string } = {}
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await client.listVersions(key, after)
    if (res.status !== 200) {
      const err = s3Error(res)
      const said = err.message ? `${err.code}: ${err.message}` : err.code
      throw new TargetError(`${client.where('GET')} answered ${res.status} to ListObjectVersions for ${describe(client, key)} (${said})`, {
        context: { status: res.status, code: err.code },
        hint: res.status === 403 ? 'Grant the target\'s keys s3:ListBucketVersions on the bucket.' : undefined,
      })
    }
    let otherKey = false
    for (const m of res.text.matchAll(/<(Version|DeleteMarker)>([\s\S]*?)<\/\1>/g)) {
      const field = (tag: string) => unescapeXml(m[2]!.match(new RegExp(`<${tag}>([^<]*)</${tag}>`))?.[1] ?? '')
      if (field('Key') !== key) {
        otherKey = true
        break
      }
      const entry = { versionId: field('VersionId'), deleteMarker: m[1] === 'DeleteMarker', lastModified: Date.parse(field('LastModified')), order: entries.length }
      entries.push(m[1] === 'Version' ? { ...entry, etag: field('ETag') } : entry)
    }
    const truncated = /<IsTruncated>true<\/IsTruncated>/.test(res.text)
    if (otherKey || !truncated) return newestFirst(entries)
    const next = (tag: string) => res.text.match(new RegExp(`<${tag}>([^<]*)</${tag}>`))?.[1]
    after = { keyMarker: unescapeXml(next('NextKeyMarker') ?? key), versionIdMarker: next('NextVersionIdMarker') }
  }
  throw new TargetError(`${describe(client, key)} has more than ${MAX_PAGES * 1000} versions and delete markers; its history was not searched to the end`)
}

function newestFirst(entries: (HistoryEntry & { order: number })[]): HistoryEntry[] {
  return entries
    .sort((a, b) => b.lastModified - a.lastModified || a.order - b.order)
    .map(({ order: _, ...e }) => e)
}

function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|quot|apos|amp);/g, (_, e: string) => ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' })[e]!)
}
