/**
 * What each target type needs and guarantees, for the targets family:
 * which config keys hold its credentials, and what its tier rests on when a
 * probe cannot tell more (docs/design.md, "Targets and tiers").
 */
import { originOf } from '../config/origin.js'
import type { TargetConfig } from '../config/types.js'
import type { CheckStatus } from './types.js'
import { allSpecs, specsOf } from '../targets/http/actions.js'

/** Config keys holding a credential, by type (TOML names). */
export function credentialKeys(t: TargetConfig, fileSecrets: readonly string[] = originOf(t)?.secrets ?? []): string[] {
  switch (t.type) {
    case 'stripe':
    case 'sendgrid':
      return ['api_key']
    case 'slack':
    case 'github':
      return ['token']
    case 's3':
      return t.sessionToken ? ['access_key_id', 'secret_access_key', 'session_token'] : ['access_key_id', 'secret_access_key']
    case 'postgres_row':
      return ['url']
    case 'http':
      return Object.keys(t.headers).map((h) => `headers.${h}`)
    case 'mcp':
      return [...Object.keys(t.env).map((v) => `env.${v}`), ...Object.keys(t.headers).map((h) => `headers.${h}`)]
    case 'repo':
      return []
    case 'webhook':
      return ['secret', ...Object.keys(t.headers).map((h) => `headers.${h}`)]
    case 'module': {
      // The settings a `${VAR}` filled in: the module alone knows which are credentials, these are the likely ones.
      const secrets = new Set(fileSecrets)
      return Object.entries(t.settings).filter(([, v]) => typeof v === 'string' && secrets.has(v)).map(([k]) => k)
    }
  }
}

export function declaredTier(t: TargetConfig): 1 | 2 | 3 | 'per tool' | 'module' {
  switch (t.type) {
    case 'mcp':
      return 'per tool'
    case 'module':
      return 'module'
    case 'webhook':
      return 1
    case 'stripe':
      return 1
    case 'sendgrid':
    case 'slack':
      return 3
    case 'http':
      return t.tier
    default:
      return 2
  }
}

/**
 * The tier verdict from the type alone. `probe` means only the probe can
 * tell (a postgres_row unique constraint, an http query_url's answers).
 */
export function tierFact(t: TargetConfig): { status: CheckStatus | 'probe'; detail: string; fix?: string } {
  switch (t.type) {
    case 'stripe':
      return { status: 'pass', detail: 'tier 1: Stripe deduplicates POST /v1/refunds by the Idempotency-Key (the effect id)' }
    case 'github':
      return { status: 'pass', detail: 'tier 2: each merge commit carries the effect id trailer; recovery lists the base branch\'s commits for it' }
    case 's3':
      return { status: 'probe', detail: 'tier 2 needs HeadObject to answer 404 for an object that does not exist (s3:ListBucket)' }
    case 'repo':
      return { status: 'pass', detail: 'tier 2: each commit carries the effect id trailer; recovery finds it with git log' }
    case 'sendgrid':
    case 'slack':
      return { status: 'pass', detail: 'tier 3: the service can neither deduplicate nor be asked; a crash in flight becomes AMBIGUOUS for an operator' }
    case 'postgres_row':
      return { status: 'probe', detail: 'tier 2 needs a unique constraint on the effect id column' }
    case 'http': {
      const specs = allSpecs(specsOf('_', t))
      if (t.tier === 1) {
        const headers = [...new Set(specs.filter((s) => s.tier === 1).map((s) => s.effectIdHeader ?? 'Idempotency-Key'))].join(' / ')
        return {
          status: 'warn',
          detail: `tier 1 is declared: the service must deduplicate by the ${headers} header, which no read-only probe can see`,
          fix: `Confirm with the service's owners (or its documentation) that a repeated request with the same ${headers} changes nothing; otherwise declare tier 3.`,
        }
      }
      if (t.tier === 3) return { status: 'pass', detail: 'tier 3: a crash in flight becomes AMBIGUOUS for an operator' }
      if (t.query || t.actions) {
        return {
          status: 'warn',
          detail: 'tier 2 rests on the declared query finding what the write carried ({effect_id} or the arguments), which no read-only probe can try without a write',
          fix: 'Confirm that a write is found by the query (and how long it takes to show: settle_ms), e.g. against a sandbox account; otherwise declare tier 3.',
        }
      }
      return { status: 'probe', detail: 'tier 2 needs query_url to answer 404 for an effect that did not happen' }
    }
    case 'mcp':
      return { status: 'probe', detail: 'each tool\'s tier comes from [targets.<name>.tools] or its annotations; only the server\'s tool list can tell' }
    case 'webhook':
      return {
        status: 'warn',
        detail: 'tier 1: the receiver must answer a repeated Idempotency-Key (the effect id) without acting again, which no read-only probe can see',
        fix: 'Make the receiver keep the Idempotency-Keys it has seen (for at least as long as an effect may be retried), or accept a notice told twice after a crash.',
      }
    case 'module':
      return { status: 'probe', detail: 'the module declares its tier; only its own probe() can tell whether the service honours it' }
  }
}
