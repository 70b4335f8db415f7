/**
 * OAuth 2.1 access tokens, as the MCP authorization specification has a
 * resource server check them: JWTs signed by one of the issuer's keys
 * (its JWKS, fetched and refreshed by jose), whose `iss` is the issuer, whose
 * `aud` is this proxy (RFC 8707: a token minted for another resource is
 * refused, never passed on), within `exp`/`nbf`, and granting the scopes
 * interlock.toml requires. The caller is `oauth:<iss>#<sub>`.
 *
 * A verified token is kept until it expires (token-cache.ts): clients send
 * it with every request, and a signature check per tools/call would be most
 * of what authentication costs.
 */
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose'
import type { McpOAuthConfig } from '../../core/config/types.js'
import type { Principal } from './principal.js'
import { TokenCache } from './token-cache.js'

/** Clock skew allowed on exp and nbf between the issuer and this machine. */
const CLOCK_TOLERANCE_S = 30

// Asymmetric only: a JWKS publishes public keys, and a token's alg header must not pick a MAC.
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']

export type TokenCheck =
  | { ok: true; principal: Principal }
  /** 401 invalid_token, 403 insufficient_scope, 503 when the issuer's keys cannot be had. */
  | { ok: false; status: 401 | 403 | 503; error?: 'invalid_token' | 'insufficient_scope'; description: string }

// Reasons a token itself is bad (401); any other failure is ours or the issuer's (503).
const INVALID = new Set([
  'ERR_JWT_EXPIRED',
  'ERR_JWT_CLAIM_VALIDATION_FAILED',
  'ERR_JWT_INVALID',
  'ERR_JWS_INVALID',
  'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  'ERR_JWKS_NO_MATCHING_KEY',
  'ERR_JWKS_MULTIPLE_MATCHING_KEYS',
  'ERR_JOSE_ALG_NOT_ALLOWED',
  'ERR_JOSE_NOT_SUPPORTED',
  'ERR_JWE_INVALID',
])

export class OAuthTokens {
  private readonly jwks: ReturnType<typeof createRemoteJWKSet>
  private readonly cache = new TokenCache<Principal>()

  constructor(
    readonly config: McpOAuthConfig,
    readonly jwksUri: string,
  ) {
    this.jwks = createRemoteJWKSet(new URL(jwksUri))
  }

  /** The principal `token` proves at `resource` (the audience when none is configured). */
  async verify(token: string, resource: string): Promise<TokenCheck> {
    const audience = this.config.audience ?? resource
    const key = `${audience}\n${token}`
    let principal = this.cache.get(key)
    if (!principal) {
      let payload: JWTPayload
      try {
        ;({ payload } = await jwtVerify(token, this.jwks, {
          issuer: this.config.issuer,
          audience,
          algorithms: ALGORITHMS,
          clockTolerance: CLOCK_TOLERANCE_S,
          requiredClaims: ['exp', 'sub'],
        }))
      } catch (e) {
        const code = (e as { code?: unknown }).code
        if (typeof code === 'string' && INVALID.has(code)) return { ok: false, status: 401, error: 'invalid_token', description: describeFailure(e as Error & { code: string; claim?: string }) }
        return { ok: false, status: 503, description: `cannot verify tokens now: the issuer's keys at ${this.jwksUri}: ${(e as Error).message}` }
      }
      principal = { id: `oauth:${payload.iss}#${payload.sub}`, via: 'oauth', scopes: scopesOf(payload) }
      this.cache.set(key, principal, payload.exp! * 1000)
    }
    const missing = this.config.scopes.filter((s) => !principal.scopes?.includes(s))
    if (missing.length > 0) return { ok: false, status: 403, error: 'insufficient_scope', description: `the token does not grant ${missing.join(' ')}` }
    return { ok: true, principal }
  }
}

/** `scope` (RFC 9068: space-separated), or `scp` as some issuers write it (a list or a string). */
function scopesOf(payload: JWTPayload): string[] {
  const raw = payload.scope ?? payload.scp
  if (typeof raw === 'string') return raw.split(' ').filter(Boolean)
  if (Array.isArray(raw)) return raw.filter((s): s is string => typeof s === 'string')
  return []
}

function describeFailure(e: Error & { code: string; claim?: string }): string {
  if (e.code === 'ERR_JWT_EXPIRED') return 'the token has expired'
  if (e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && e.claim === 'aud') return 'the token is not for this resource (aud)'
  if (e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && e.claim === 'iss') return 'the token is from another issuer (iss)'
  if (e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && e.claim === 'nbf') return 'the token is not valid yet (nbf)'
  if (e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') return `the token's ${e.claim ?? 'claims'} failed validation`
  if (e.code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' || e.code === 'ERR_JWKS_NO_MATCHING_KEY') return 'the token is not signed by the issuer\'s keys'
  return 'the token is not a valid JWT access token'
}
