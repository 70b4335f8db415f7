/**
 * An S3 target on the S3 emulator (test/emulators/s3.ts), with its
 * credentials and path-style addressing: the S3 tests' buckets are 'docs' and
 * the versioned 'history', which the target named 's3v' writes to.
 */
import { S3Target, type S3TargetOptions, type S3TargetSettings } from '../../src/core/targets/s3/index.js'
import type { S3Emulator } from '../emulators/s3.js'

export function emulatedS3Target(s3: S3Emulator, name: string, over: Partial<S3TargetSettings> = {}, options: S3TargetOptions = {}): S3Target {
  return new S3Target(
    name,
    {
      bucket: name === 's3v' ? 'history' : 'docs',
      region: s3.region,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      endpoint: s3.url,
      pathStyle: true,
      ...over,
    },
    options,
  )
}
