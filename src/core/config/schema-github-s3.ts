/**
 * JSON Schema of the github and s3 targets, part of schema.ts's target
 * schema. Both are tier 2 by what the service offers (a trailer on the merge
 * commit, metadata on the object), not by a setting.
 *
 * Credentials must be `${VAR}` references: the loader records what a
 * reference expands to as a secret and scrubs it from all output, while a key
 * written into the file would be printed by `config show` like any value.
 */

import { httpTimeouts } from './schema-common.js'

const credential = (description: string) =>
  ({
    type: 'string',
    pattern: '^\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}$',
    patternErrorMessage: 'must be a ${VAR} reference: keep the credential in the environment, not in this file',
    description,
  }) as const

const timeouts = httpTimeouts

const httpOrigin = (description: string) =>
  ({
    type: 'string',
    pattern: '^(https?://|\\$\\{)',
    patternErrorMessage: 'must be an http:// or https:// URL, or start with a ${VAR} reference',
    description,
  }) as const

const githubName = (description: string) =>
  ({
    type: 'string',
    pattern: '^(\\$\\{|[A-Za-z0-9_.-]{1,100}$)',
    patternErrorMessage: 'must be a GitHub name: letters, digits, ".", "-" and "_"',
    description,
  }) as const

export const githubTarget = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'token', 'owner', 'repo'],
  properties: {
    type: {
      const: 'github',
      description:
        'Pull request merges on GitHub (tier 2: the merge commit carries the effect id as a trailer; the head commit decided on is pushed down as the merge\'s sha; compensated by a revert commit).',
    },
    token: credential('GitHub token allowed to merge pull requests and write the repository\'s contents, e.g. "${GITHUB_TOKEN}".'),
    owner: githubName('Account or organisation that owns the repository, e.g. "acme".'),
    repo: githubName('Repository name, without ".git", e.g. "widgets".'),
    base_url: httpOrigin('Base URL of the GitHub REST API; "https://<host>/api/v3" for GitHub Enterprise Server, an emulator in tests. Default "https://api.github.com".'),
    merge_method: {
      enum: ['merge', 'squash'],
      description:
        'How pull requests are merged when an effect does not say. "rebase" is not offered: GitHub drops the commit message, and with it the effect id query looks for. Default "merge".',
    },
    ...timeouts,
  },
} as const

export const s3Target = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'bucket', 'region', 'access_key_id', 'secret_access_key'],
  properties: {
    type: {
      const: 's3',
      description:
        'Objects in an S3 bucket or an S3-compatible store (tier 2: each write carries the effect id in the object\'s metadata; premises are pushed down as If-Match / If-None-Match, deletes included; recovery needs the keys to hold s3:ListBucket, and s3:ListBucketVersions on a versioned bucket).',
    },
    bucket: {
      type: 'string',
      pattern: '^(\\$\\{|[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$)',
      patternErrorMessage: 'must be a bucket name: 3-63 lower-case letters, digits, "." and "-"',
      description: 'Bucket the effects write to.',
    },
    region: {
      type: 'string',
      pattern: '^(\\$\\{|[a-z]{2}(-[a-z0-9]+)+$|auto$)',
      patternErrorMessage: 'must be a region name such as "eu-west-1"',
      description: 'Region of the bucket; requests are signed for it (SigV4). E.g. "eu-west-1".',
    },
    access_key_id: credential('Access key id, e.g. "${AWS_ACCESS_KEY_ID}".'),
    secret_access_key: credential('Secret access key, e.g. "${AWS_SECRET_ACCESS_KEY}". It signs requests and is never sent.'),
    session_token: credential('Session token of temporary credentials, e.g. "${AWS_SESSION_TOKEN}". Optional.'),
    endpoint: httpOrigin(
      'Origin of an S3-compatible store (MinIO, R2, Ceph) or an emulator, e.g. "http://127.0.0.1:9000". Default: AWS, "https://s3.<region>.amazonaws.com".',
    ),
    path_style: {
      type: 'boolean',
      description:
        'Address the bucket in the URL path (https://host/bucket/key) instead of the host name (https://bucket.host/key); most S3-compatible stores, and bucket names with dots over https, need true. Default false.',
    },
    ...timeouts,
  },
} as const
