/**
 * `interlock check`'s read-only probe of an S3 target: HeadBucket
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadBucket.html),
 * signed with the target's keys. S3 answers 200 when the bucket exists and
 * the keys may list it, 404 when there is no such bucket, 403 when the keys
 * are refused or lack s3:ListBucket, 301 or 400 when the region is wrong; a
 * HEAD answer has no body, so the status is all there is to read.
 */
import type { ProbeResult } from '../target.js'
import type { S3Client } from './client.js'

export async function probeS3(client: S3Client, signal?: AbortSignal): Promise<ProbeResult> {
  const { bucket, region } = client.location
  const where = client.where('HEAD')
  const answer = await client.headBucket(signal)
  switch (answer.status) {
    case 200:
      return { ok: true, detail: `HeadBucket ${bucket} answered 200: the bucket exists and the keys may list it` }
    case 404:
      return { ok: false, detail: `${where}: HeadBucket answered 404: there is no bucket ${bucket}`, fix: 'Create the bucket, or fix bucket (and endpoint) in the target config.' }
    case 403:
      return {
        ok: false,
        credentialRefused: true,
        detail: `${where}: HeadBucket ${bucket} answered 403: the keys were refused or may not list the bucket`,
        fix: 'Check access_key_id / secret_access_key (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), and grant s3:ListBucket, s3:GetObject, s3:PutObject on the bucket.',
      }
    case 301:
    case 400:
      return { ok: false, detail: `${where}: HeadBucket ${bucket} answered ${answer.status}: the bucket is not in region ${region}, or the request is malformed`, fix: 'Set region to the bucket\'s region (and endpoint for S3-compatible stores).' }
    default:
      return { ok: false, detail: `${where}: HeadBucket ${bucket} answered ${answer.status}`, fix: answer.status >= 500 ? 'S3 could not answer now; run the check again.' : 'Check endpoint, region and path_style.' }
  }
}
