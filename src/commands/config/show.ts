import { BaseCommand } from '../../cli/base-command.js'
import { wideFlag } from '../../cli/wide-flag.js'
import { operatorsSection, policySection, reconcileSection, relaySection, type Section } from '../../cli/config-sections.js'
import { DEFAULTS } from '../../core/config/defaults.js'
import type { InterlockConfig, TargetConfig } from '../../core/config/types.js'

export default class ConfigShow extends BaseCommand<typeof ConfigShow> {
  static override needsAllTargets = false
  static override summary = 'Validate interlock.toml and show the configuration in effect.'
  static override description = `Loads the config file (--config, else $INTERLOCK_CONFIG, else ./interlock.toml), validates every key, expands \${VAR} references and applies defaults. Values that came from environment variables are shown as ***. With no config file, shows the embedded default (SQLite in the current folder, no targets).`
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --config deploy/interlock.toml',
    '<%= config.bin %> <%= command.id %> --json',
  ]
  static override allowDefaultConfig = true
  static override flags = { ...wideFlag }

  async run(): Promise<InterlockConfig> {
    const config = await this.interlockConfig()
    // Shown anyway (a read-only command makes no target), but said: a relay or `outbox submit` would refuse them.
    for (const problem of config.unresolved ?? []) this.logToStderr(`Warning: ${problem}; the target cannot be used until it is.`)

    this.log(`Config: ${config.file ?? 'embedded default (no interlock.toml found)'}`)
    this.log()
    this.table(['store', 'value'], storeRows(config))
    this.log()
    this.table(['gate', 'value'], [
      ['max_attempts', config.gate.maxAttempts],
      ['backoff_ms', config.gate.backoffMs],
      ['max_wait_ms', config.gate.maxWaitMs],
    ])
    this.log()
    const names = Object.keys(config.targets).sort()
    if (names.length === 0) this.log('No targets.')
    else this.table(['target', 'type', 'tier', 'where', 'details'], names.map((n) => targetRow(n, config.targets[n]!)))
    for (const section of [operatorsSection, policySection, reconcileSection, relaySection]) {
      this.log()
      this.section(section(config))
    }

    return config
  }

  private section(section: Section): void {
    if ('line' in section) this.log(section.line)
    else this.table(section.head, section.rows)
  }
}

function storeRows(config: InterlockConfig): [string, string][] {
  const { store } = config
  return store.kind === 'sqlite'
    ? [['kind', 'sqlite'], ['path', store.path]]
    : [
        ['kind', 'postgres'],
        ['url', store.url],
        ['schema', store.schema],
        ['access', store.access ?? 'full'],
        ['statement_timeout_ms', String(store.statementTimeoutMs ?? DEFAULTS.storeStatementTimeoutMs)],
        ['lock_timeout_ms', String(store.lockTimeoutMs ?? DEFAULTS.storeLockTimeoutMs)],
        ['idle_in_transaction_timeout_ms', String(store.idleInTransactionTimeoutMs ?? DEFAULTS.storeIdleInTransactionTimeoutMs)],
      ]
}

function targetRow(name: string, target: TargetConfig): (string | number)[] {
  if (target.type === 'repo') {
    return [name, 'repo', 2, target.path, `branch=${target.branch} author=${target.author}`]
  }
  // The credential is never shown, not even redacted: it is in the environment, not in this file.
  if (target.type === 'stripe' || target.type === 'sendgrid' || target.type === 'slack') {
    const timeouts = `timeout_ms=${target.timeoutMs} connect_timeout_ms=${target.connectTimeoutMs}`
    return [name, target.type, target.type === 'stripe' ? 1 : 3, target.baseUrl, timeouts]
  }
  if (target.type === 'github') {
    const details = `repo=${target.owner}/${target.repo} merge_method=${target.mergeMethod}\ntimeout_ms=${target.timeoutMs} connect_timeout_ms=${target.connectTimeoutMs}`
    return [name, 'github', 2, target.baseUrl, details]
  }
  if (target.type === 's3') {
    const endpoint = target.endpoint ?? `https://s3.${target.region}.amazonaws.com`
    const details = `region=${target.region} endpoint=${endpoint} path_style=${target.pathStyle}\ntimeout_ms=${target.timeoutMs} connect_timeout_ms=${target.connectTimeoutMs}`
    return [name, 's3', 2, `s3://${target.bucket}`, details]
  }
  if (target.type === 'postgres_row') {
    // The url is left out like a credential: it usually carries the password.
    const details = [
      `effect_id_column=${target.effectIdColumn}`,
      ...Object.entries(target.columns).map(([arg, column]) => `args.${arg} → ${column}`),
      `statement_timeout_ms=${target.statementTimeoutMs} timeout_ms=${target.timeoutMs} connect_timeout_ms=${target.connectTimeoutMs}`,
    ]
    if (target.premiseSql) details.push(`premise_sql (${target.premiseParams.join(', ') || 'no params'})`)
    if (target.compensateSql) details.push(`compensate_sql (${target.compensateParams.join(', ') || 'no params'})`)
    return [name, 'postgres_row', 2, target.table, details.join('\n')]
  }
  if (target.type === 'mcp') {
    // env and headers are left out like credentials: they usually carry one.
    const details = [`timeout_ms=${target.timeoutMs} connect_timeout_ms=${target.connectTimeoutMs} max_result_bytes=${target.maxResultBytes}`]
    for (const [tool, t] of Object.entries(target.tools)) details.push(`tools.${tool}: ${t.tier === 'read' ? 'read' : `tier ${t.tier}`}`)
    const http = target.proxyHttp
    // Who may call mcp-proxy --http: the principals and the issuer, never a token.
    if (http) {
      const ways = [
        ...(http.tokens.length > 0 ? [`tokens for ${[...new Set(http.tokens.map((t) => t.principal))].join(', ')}`] : []),
        ...(http.oauth ? [`oauth ${http.oauth.issuer}${http.oauth.scopes.length > 0 ? ` (scopes ${http.oauth.scopes.join(' ')})` : ''}`] : []),
      ]
      details.push(`proxy_http: ${ways.join('; ') || 'no authentication'}${http.allowedHosts.length > 0 ? `; hosts ${http.allowedHosts.join(', ')}` : ''}`)
    }
    return [name, 'mcp', 'per tool', target.url ?? [target.command, ...target.args].join(' '), details.join('\n')]
  }
  if (target.type === 'webhook') {
    // The secret is left out; header values too: they usually carry a credential.
    const details = [`timeout_ms=${target.timeoutMs} connect_timeout_ms=${target.connectTimeoutMs}`, ...Object.keys(target.headers).map((h) => `${h}: ***`)]
    return [name, 'webhook', 1, target.url, details.join('\n')]
  }
  if (target.type === 'module') {
    // Settings by key only: the module alone knows which of them are credentials.
    const keys = Object.keys(target.settings)
    return [name, 'module', 'by module', target.module, keys.length > 0 ? `settings: ${keys.join(', ')}` : 'no settings']
  }
  const details = [`method=${target.method}`, `timeout_ms=${target.timeoutMs}`, `connect_timeout_ms=${target.connectTimeoutMs}`]
  if (target.queryUrl) details.push(`query_url=${target.queryUrl}`)
  if (target.premiseUrl) details.push(`premise_url=${target.premiseUrl}`)
  for (const [header, value] of Object.entries(target.headers)) details.push(`${header}: ${value}`)
  return [name, 'http', target.tier, target.url, details.join('\n')]
}
