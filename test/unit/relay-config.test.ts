/** `[relay]` in interlock.toml: defaults, every key, the key path resolved against the file, bad values refused by name. */
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { ConfigError } from '../../src/core/errors.js'

const FILE = '/srv/agent/interlock.toml'

describe('[relay] config', () => {
  it('defaults when absent', () => {
    expect(parseConfig('', { file: FILE }).relay).toEqual({
      concurrency: 32,
      leaseMs: 30_000,
      pollMs: 1_000,
      logFormat: 'text',
      stallMs: 20_000,
      heartbeatRetentionMs: 7 * 86_400_000,
    })
  })

  it('reads every key; the key file is relative to the config file', () => {
    const text =
      '[relay]\nid = "relay-1"\nkey = "keys/relay.key"\nconcurrency = 8\nlease_ms = 5000\npoll_ms = 50\nhealth_port = 9464\nlog_format = "json"\nstall_ms = 4000\nheartbeat_retention = "2d"\n'
    expect(parseConfig(text, { file: FILE }).relay).toEqual({
      id: 'relay-1',
      key: '/srv/agent/keys/relay.key',
      concurrency: 8,
      leaseMs: 5_000,
      pollMs: 50,
      healthPort: 9464,
      logFormat: 'json',
      stallMs: 4_000,
      heartbeatRetentionMs: 2 * 86_400_000,
    })
  })

  it('refuses bad values, naming the key', () => {
    const err = (() => {
      try {
        parseConfig('[relay]\nlease_ms = 10\nconcurrency = 0\nid = "has space"\nhealth_port = 70000\nlog_format = "xml"\nstall_ms = 5\nheartbeat_retention = "a week"\nspeed = 1\n', { file: FILE })
      } catch (e) {
        return e
      }
    })() as ConfigError
    expect(err).toBeInstanceOf(ConfigError)
    const text = err.problems.join('\n')
    for (const key of ['relay.lease_ms', 'relay.concurrency', 'relay.id', 'relay.health_port', 'relay.log_format', 'relay.stall_ms', 'relay.heartbeat_retention', 'speed']) expect(text).toContain(key)
  })
})
