/**
 * The pieces that keep the MCP gateway's callers apart, each on its own:
 * an effect's principal and trace context, principal patterns, the allow /
 * deny lists of interlock.toml, and a call's keys and trace in `_meta`.
 */
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import type { McpTargetConfig } from '../../src/core/config/types.js'
import { effectId, effectJson, toEffect } from '../../src/core/effect.js'
import { ConfigError, InputError } from '../../src/core/errors.js'
import { principalMatches } from '../../src/core/principal-pattern.js'
import { traceContextOf } from '../../src/core/trace-context.js'
import { accessRefusal } from '../../src/integrations/mcp/access.js'
import { readCallMeta } from '../../src/integrations/mcp/meta.js'

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
const base = { thread: 't', target: 'fs', action: 'write_file', args: { path: 'a' } }

describe('an effect that says who asked', () => {
  it('the principal is part of the id (absent: the id is what it was); the trace is journaled but not', () => {
    const plain = toEffect(base)
    const mine = toEffect({ ...base, principal: 'token:ci-bot' })
    const traced = toEffect({ ...base, principal: 'token:ci-bot', trace: { traceparent: PARENT } })
    expect(plain.id).toBe(effectId(base))
    expect(mine.id).not.toBe(plain.id)
    expect(toEffect({ ...base, principal: 'token:other' }).id).not.toBe(mine.id)
    expect(traced.id).toBe(mine.id)
    expect(effectJson(traced)).toEqual({ id: mine.id, ...base, premises: {}, principal: 'token:ci-bot', trace: { traceparent: PARENT } })
    expect(effectJson(plain)).not.toHaveProperty('principal')
  })

  it('refuses a principal or a trace that is not well formed, naming the field', () => {
    for (const principal of ['', 'x'.repeat(301), 'a\nb']) expect(() => toEffect({ ...base, principal })).toThrow(/effect\.principal/)
    for (const trace of [{ traceparent: 'nope' }, { traceparent: PARENT, extra: 1 }, { traceparent: PARENT, tracestate: 'a\nb' }, [PARENT]]) {
      expect(() => toEffect({ ...base, trace: trace as never })).toThrow(InputError)
    }
  })
})

describe('W3C trace context in _meta', () => {
  it('takes a well-formed traceparent (and tracestate), ignores a malformed one as the spec says', () => {
    expect(traceContextOf({ traceparent: PARENT, tracestate: 'congo=t61rcWkgMzE' })).toEqual({ traceparent: PARENT, tracestate: 'congo=t61rcWkgMzE' })
    expect(traceContextOf({ traceparent: PARENT, tracestate: 'x'.repeat(513) })).toEqual({ traceparent: PARENT })
    for (const traceparent of ['00-00000000000000000000000000000000-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', PARENT.toUpperCase(), `${PARENT}-x`, 42]) {
      expect(traceContextOf({ traceparent })).toBeUndefined()
    }
    expect(traceContextOf(undefined)).toBeUndefined()
  })
})

describe('principal patterns', () => {
  it('match exactly, or by what precedes a trailing *; no principal matches nothing', () => {
    expect(principalMatches('token:ci-bot', 'token:ci-bot')).toBe(true)
    expect(principalMatches('token:ci-bot', 'token:ci-bot-2')).toBe(false)
    expect(principalMatches('token:*', 'token:ci-bot')).toBe(true)
    expect(principalMatches('token:*', 'user:ci-bot')).toBe(false)
    expect(principalMatches('*', undefined)).toBe(false)
  })
})

describe('allow and deny', () => {
  const config = (over: Partial<McpTargetConfig> = {}, tool: { allow?: string[]; deny?: string[] } = {}) =>
    ({ tools: { write_file: { tier: 3, restsOn: [], dedupe: 'window', dedupeWindowMs: 1, ...tool } }, ...over }) as McpTargetConfig
  const as = (id: string) => ({ id, via: 'bearer' as const })

  it('a deny anywhere wins; an allow list keeps out whoever it does not name; no lists let everyone in', () => {
    expect(accessRefusal('fs', config(), 'write_file', as('token:a'))).toBeUndefined()
    expect(accessRefusal('fs', config({ allow: ['token:*'] }, { deny: ['token:mallory'] }), 'write_file', as('token:mallory'))).toBe(
      'token:mallory may not call write_file: targets.fs.tools.write_file.deny lists "token:mallory"',
    )
    expect(accessRefusal('fs', config({ deny: ['user:*'] }, { allow: ['user:eve'] }), 'write_file', as('user:eve'))).toBe('user:eve may not call write_file: targets.fs.deny lists "user:*"')
    expect(accessRefusal('fs', config({ allow: ['token:*'] }), 'read_file', as('user:eve'))).toBe('user:eve may not call read_file: targets.fs.allow does not list it')
    expect(accessRefusal('fs', config({ allow: ['token:*'] }, { allow: ['token:ci-bot'] }), 'write_file', as('token:other'))).toBe(
      'token:other may not call write_file: targets.fs.tools.write_file.allow does not list it',
    )
    expect(accessRefusal('fs', config({ allow: ['token:*'] }, { allow: ['token:ci-bot'] }), 'write_file', as('token:ci-bot'))).toBeUndefined()
  })

  it('interlock.toml: lists of principals at the target and per tool; anything else is refused naming the key', () => {
    const toml = (lists: string) => `[targets.fs]\ntype = "mcp"\ncommand = "server"\n${lists}\n[targets.fs.tools.write_file]\ntier = 3\ndeny = ["token:mallory"]\n`
    const t = parseConfig(toml('allow = ["token:*", "user:alice"]'), { file: '/srv/interlock.toml', env: {} }).targets.fs as McpTargetConfig
    expect(t.allow).toEqual(['token:*', 'user:alice'])
    expect(t.deny).toBeUndefined()
    expect(t.tools.write_file?.deny).toEqual(['token:mallory'])
    const err = (() => {
      try {
        parseConfig(toml('allow = "token:*"'), { file: '/srv/interlock.toml', env: {} })
      } catch (e) {
        return e
      }
    })()
    expect(err).toBeInstanceOf(ConfigError)
    expect((err as ConfigError).problems.join('\n')).toContain('targets.fs.allow')
  })
})

describe('caller keys and trace in a call', () => {
  it('_meta["interlock/key"] and SEP-3182\'s idempotencyKey are one key; two different ones, or one of the proxy\'s own form, are refused', () => {
    expect(readCallMeta({ 'interlock/key': 'k' }).key).toBe('k')
    expect(readCallMeta({}, 'k').key).toBe('k')
    expect(readCallMeta({ 'interlock/key': 'k' }, 'k').key).toBe('k')
    expect(() => readCallMeta({ 'interlock/key': 'k' }, 'j')).toThrow(/two different keys/)
    expect(() => readCallMeta({}, 42)).toThrow(/idempotencyKey must be a non-empty string/)
    expect(() => readCallMeta({ 'interlock/key': 'repeat-3' })).toThrow(/"repeat-3"/)
  })

  it('a traceparent in _meta is the call\'s trace, and goes on with the rest of _meta', () => {
    const m = readCallMeta({ traceparent: PARENT, tracestate: 'a=1', 'interlock/thread': 'x', progressToken: 7 })
    expect(m.trace).toEqual({ traceparent: PARENT, tracestate: 'a=1' })
    expect(m.passOn).toEqual({ traceparent: PARENT, tracestate: 'a=1' })
  })
})
