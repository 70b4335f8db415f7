import { afterEach, describe, expect, it } from 'vitest'
import type { HttpTargetConfig, TargetConfig } from '../../../src/core/config/types.js'
import { ConfigError, InputError } from '../../../src/core/errors.js'
import { HttpTarget } from '../../../src/core/targets/http/index.js'
import { createTarget, createTargets } from '../../../src/core/targets/registry.js'
import { RepoTarget } from '../../../src/core/targets/repo/index.js'
import { tempRepo, type TempRepo } from '../../helpers/git-repo.js'

const http = (over: Partial<HttpTargetConfig> = {}): HttpTargetConfig => ({
  type: 'http',
  tier: 1,
  url: 'http://127.0.0.1:9/pay',
  method: 'POST',
  headers: {},
  timeoutMs: 1000,
  connectTimeoutMs: 500,
  ...over,
})

let repo: TempRepo | undefined
afterEach(() => repo?.cleanup())

describe('target registry', () => {
  it('builds each type from config, by name', async () => {
    repo = await tempRepo()
    const targets = createTargets({
      code: { type: 'repo', path: repo.path, branch: 'main', author: 'Bot <bot@example.invalid>' },
      payments: http(),
      status: http({ tier: 2, queryUrl: 'http://127.0.0.1:9/applied/{effect_id}' }),
    })
    expect([...targets.keys()]).toEqual(['code', 'payments', 'status'])
    expect(targets.get('code')).toBeInstanceOf(RepoTarget)
    expect(targets.get('code')!.tier).toBe(2)
    expect(targets.get('payments')).toBeInstanceOf(HttpTarget)
    expect(typeof targets.get('status')!.query).toBe('function')
    for (const t of targets.values()) await t.close?.()
  })

  it('refuses a tier-2 http target without query_url, and an unknown type', () => {
    expect(() => createTarget('status', http({ tier: 2 }))).toThrow(ConfigError)
    expect(() => createTargets({ ok: http(), bad: { type: 'ftp' } as unknown as TargetConfig })).toThrow(InputError)
  })
})
