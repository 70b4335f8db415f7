/**
 * JSON Schema of [targets.<name>.proxy_http]: who may call `interlock
 * mcp-proxy --http` in front of that mcp target, and from where
 * (docs/mcp.md, "Exposing the proxy over HTTP"). Which Host and Origin
 * headers a request may carry (DNS rebinding), and how a caller proves who
 * it is: a static bearer token naming a principal, or an OAuth 2.1 access
 * token (a JWT) from an authorization server, per the MCP authorization
 * specification. The bind address itself is the --http flag's.
 */

const stringList = (description: string, item: Record<string, unknown>) => ({ type: 'array', uniqueItems: true, description, items: { type: 'string', ...item } }) as const

const HTTP_URL = { pattern: '^https?://[^\\s#]+$', patternErrorMessage: 'must be an http:// or https:// URL without a fragment' } as const

const token = {
  type: 'object',
  additionalProperties: false,
  required: ['principal', 'token'],
  description: 'One static bearer token and the principal it proves: a request with `Authorization: Bearer <token>` is that principal (`token:<principal>` in the journal).',
  properties: {
    principal: {
      type: 'string',
      pattern: '^[A-Za-z0-9._@-]{1,64}$',
      patternErrorMessage: 'must be 1 to 64 letters, digits, ".", "_", "@" or "-"',
      description: 'Who holds the token, e.g. "ci-bot". Several tokens may name the same principal (to rotate one).',
    },
    token: {
      type: 'string',
      pattern: '^\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}$',
      patternErrorMessage: 'must be a ${VAR} reference to an environment variable (the token itself stays out of the file), e.g. "${CI_BOT_TOKEN}"',
      description: 'The token, as a ${VAR} reference only, e.g. "${CI_BOT_TOKEN}": at least 16 characters, kept out of every output. Compared in constant time.',
    },
  },
} as const

const oauth = {
  type: 'object',
  additionalProperties: false,
  required: ['issuer'],
  description:
    'OAuth 2.1 resource server (MCP authorization, RFC 9728): the proxy serves its protected resource metadata at /.well-known/oauth-protected-resource (and /.well-known/oauth-protected-resource/mcp), answers a request without a valid token 401 with `WWW-Authenticate: Bearer resource_metadata="..."`, and accepts JWT access tokens signed by the issuer\'s keys, for its audience, not expired. The caller is `oauth:<iss>#<sub>`.',
  properties: {
    issuer: {
      type: 'string',
      ...HTTP_URL,
      description: 'The authorization server\'s issuer identifier, exactly as its tokens\' `iss` claim says, e.g. "https://auth.example.com". Listed in the metadata as the authorization server clients get tokens from.',
    },
    audience: {
      type: 'string',
      minLength: 1,
      description: 'The `aud` a token must carry. Default: the proxy\'s resource URL (`resource`), which MCP clients ask tokens for (RFC 8707).',
    },
    jwks_uri: {
      type: 'string',
      ...HTTP_URL,
      description:
        'Where the issuer publishes its signing keys (JWKS), e.g. "https://auth.example.com/.well-known/jwks.json". Default: the `jwks_uri` of the issuer\'s metadata (/.well-known/oauth-authorization-server, else /.well-known/openid-configuration), read at start.',
    },
    scopes: stringList('Scopes every token must grant, e.g. ["notes:write"]; a token without one of them is answered 403 insufficient_scope. Listed in the metadata as scopes_supported. Default: none.', {
      pattern: '^[!#-\\[\\]-~]+$',
      patternErrorMessage: 'must be one OAuth scope: printable characters, no space, quote or backslash',
    }),
  },
} as const

export const mcpProxyHttp = {
  type: 'object',
  additionalProperties: false,
  description:
    'How `interlock mcp-proxy --http` lets callers in: allowed Host and Origin headers, and authentication (`tokens`, `oauth`, or both). --http needs one of them unless bound to a loopback address with --insecure-no-auth.',
  properties: {
    allowed_hosts: stringList(
      'Host header values a request may carry, e.g. ["mcp.example.com"]: a name alone allows any port, "name:port" that port only. On a loopback address localhost, 127.0.0.1 and [::1] at the bound port are allowed besides; on any other address this list is required. Other hosts: 403, before anything else (DNS rebinding).',
      { minLength: 1, pattern: '^[^\\s/@]+$', patternErrorMessage: 'must be a host name, optionally with :port, e.g. "mcp.example.com" or "mcp.example.com:8443"' },
    ),
    allowed_origins: stringList(
      'Origin header values a request may carry, e.g. ["https://app.example.com"]. A request without Origin (any client but a browser) is allowed; on a loopback address the loopback origins at the bound port are allowed besides. Other origins: 403.',
      { pattern: '^https?://[^/\\s]+$', patternErrorMessage: 'must be an origin: scheme, host and optional port, no path, e.g. "https://app.example.com"' },
    ),
    resource: {
      type: 'string',
      ...HTTP_URL,
      description:
        'The URL clients reach the MCP endpoint at, e.g. "https://mcp.example.com/mcp" behind a TLS-terminating proxy: the `resource` of the OAuth metadata and the default token audience. Default on a loopback address: http://<Host header>/mcp; required for `oauth` on any other address.',
    },
    tokens: { type: 'array', description: 'Static bearer tokens, as [[targets.<name>.proxy_http.tokens]] tables.', items: token },
    oauth,
  },
} as const
