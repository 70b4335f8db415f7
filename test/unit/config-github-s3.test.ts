import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { ConfigError } from '../../src/core/errors.js'
import { GithubTarget } from '../../src/core/targets/github/index.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { S3Target } from '../../src/core/targets/s3/index.js'

const FILE = '/srv/agent/interlock.toml'
const ENV = { GITHUB_TOKEN: 'ghp_fromTheEnvironment123', AWS_ACCESS_KEY_ID: 'AKIAFROMENV000000000', AWS_SECRET_ACCESS_KEY: 'secretFromEnv/abcdefghij' }
const GITHUB = '[targets.code]\ntype = "github"\ntoken = "${GITHUB_TOKEN}"\nowner = "acme"\nrepo = "widgets"\n'
const S3 = '[targets.files]\ntype = "s3"\nbucket = "acme-reports"\nregion = "eu-west-1"\naccess_key_id = "${AWS_ACCESS_KEY_ID}"\nsecret_access_key = "${AWS_SECRET_ACCESS_KEY}"\n'

function problemsOf(text: string): string[] {
  try {
    parseConfig(text, { file: FILE, env: ENV })
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError)
    return [...(e as ConfigError).problems]
  }
  throw new Error('expected a ConfigError')
}

describe('github and s3 targets in interlock.toml', () => {
  it('load with their defaults; credentials come from the environment and are recorded as secrets', () => {
    const config = parseConfig(`${GITHUB}\n${S3}`, { file: FILE, env: ENV })
    expect(config.targets.code).toEqual({
      type: 'github',
      token: ENV.GITHUB_TOKEN,
      owner: 'acme',
      repo: 'widgets',
      mergeMethod: 'merge',
      baseUrl: 'https://api.github.com',
      timeoutMs: 10_000,
      connectTimeoutMs: 3_000,
    })
    expect(config.targets.files).toEqual({
      type: 's3',
      bucket: 'acme-reports',
      region: 'eu-west-1',
      accessKeyId: ENV.AWS_ACCESS_KEY_ID,
      secretAccessKey: ENV.AWS_SECRET_ACCESS_KEY,
      pathStyle: false,
      timeoutMs: 10_000,
      connectTimeoutMs: 3_000,
    })
    expect([...config.secrets].sort()).toEqual(Object.values(ENV).sort())
  })

  it('take every optional key', () => {
    const config = parseConfig(
      `${GITHUB}merge_method = "squash"\nbase_url = "https://ghe.example.com/api/v3"\ntimeout_ms = 5000\n\n${S3}session_token = "\${GITHUB_TOKEN}"\nendpoint = "http://127.0.0.1:9000"\npath_style = true\nconnect_timeout_ms = 500\n`,
      { file: FILE, env: ENV },
    )
    expect(config.targets.code).toMatchObject({ mergeMethod: 'squash', baseUrl: 'https://ghe.example.com/api/v3', timeoutMs: 5000 })
    expect(config.targets.files).toMatchObject({ sessionToken: ENV.GITHUB_TOKEN, endpoint: 'http://127.0.0.1:9000', pathStyle: true, connectTimeoutMs: 500 })
  })

  it('refuse credentials written into the file, rebase merges, bad names and unknown keys, by key path', () => {
    expect(problemsOf(GITHUB.replace('${GITHUB_TOKEN}', 'ghp_literal').concat('merge_method = "rebase"\nowner2 = "x"\n'))).toEqual([
      'targets.code.owner2: unknown key (did you mean "owner"?)',
      'targets.code.token: must be a ${VAR} reference: keep the credential in the environment, not in this file',
      'targets.code.merge_method: must be "merge" or "squash"',
    ])
    expect(problemsOf(S3.replace('acme-reports', 'Acme_Reports').replace('"${AWS_SECRET_ACCESS_KEY}"', '"plain"').concat('acl = "public-read"\n'))).toEqual([
      'targets.files.acl: unknown key',
      'targets.files.bucket: must be a bucket name: 3-63 lower-case letters, digits, "." and "-"',
      'targets.files.secret_access_key: must be a ${VAR} reference: keep the credential in the environment, not in this file',
    ])
    expect(problemsOf('[targets.files]\ntype = "s3"\nbucket = "b-1"\n')).toEqual([
      'targets.files.region: required key is missing',
      'targets.files.access_key_id: required key is missing',
      'targets.files.secret_access_key: required key is missing',
    ])
  })

  it('the registry builds them as tier-2 targets that can be asked', async () => {
    const config = parseConfig(`${GITHUB}\n${S3}`, { file: FILE, env: ENV })
    const targets = createTargets(config.targets, { secrets: config.secrets })
    expect(targets.get('code')).toBeInstanceOf(GithubTarget)
    expect(targets.get('files')).toBeInstanceOf(S3Target)
    for (const t of targets.values()) {
      expect(t.tier).toBe(2)
      expect(typeof t.query).toBe('function')
      await t.close?.()
    }
  })
})
