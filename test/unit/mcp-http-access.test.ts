/**
 * The parts of `mcp-proxy --http` access that need no process: which Host
 * and Origin values pass (http-guard.ts), which static token names whom
 * (static-tokens.ts), and the cache of verified access tokens
 * (token-cache.ts): bounded, least recently used out first, nothing kept
 * past its expiry. The whole is tested end to end in
 * test/e2e/mcp-http-auth.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { HostGuard, isLoopback } from '../../src/integrations/mcp/http-guard.js'
import { StaticTokens } from '../../src/integrations/mcp/static-tokens.js'
import { TokenCache } from '../../src/integrations/mcp/token-cache.js'

describe('HostGuard', () => {
  const loopback = new HostGuard({ bindHost: '127.0.0.1', port: 8931, allowedHosts: [], allowedOrigins: [] })

  it('on loopback: the loopback names at the bound port, and their origins; a request without Origin passes', () => {
    for (const host of ['127.0.0.1:8931', 'localhost:8931', 'LOCALHOST:8931', '[::1]:8931']) expect(loopback.refusal({ host }), host).toBeUndefined()
    for (const origin of ['http://localhost:8931', 'http://127.0.0.1:8931', 'http://[::1]:8931']) expect(loopback.refusal({ host: 'localhost:8931', origin }), origin).toBeUndefined()
  })

  it('refuses another name, another port, no Host, and any other Origin (another port, https, "null")', () => {
    for (const host of ['attacker.example:8931', '127.0.0.1:8932', 'localhost', '127.0.0.1.attacker.example:8931', undefined]) {
      expect(loopback.refusal({ host }), String(host)).toMatch(/^Invalid Host: /)
    }
    for (const origin of ['http://attacker.example:8931', 'http://localhost:8932', 'https://localhost:8931', 'null', 'not a url']) {
      expect(loopback.refusal({ host: 'localhost:8931', origin }), origin).toMatch(/^Invalid Origin: /)
    }
  })

  it('elsewhere: only the configured hosts (a name alone at any port, name:port at that one) and origins', () => {
    const wide = new HostGuard({ bindHost: '0.0.0.0', port: 8931, allowedHosts: ['mcp.example.com', 'edge.example.com:443'], allowedOrigins: ['https://App.example.com'] })
    expect(wide.refusal({ host: 'mcp.example.com' })).toBeUndefined()
    expect(wide.refusal({ host: 'mcp.example.com:8931' })).toBeUndefined()
    expect(wide.refusal({ host: 'edge.example.com:443' })).toBeUndefined()
    expect(wide.refusal({ host: 'edge.example.com' })).toMatch(/^Invalid Host/)
    expect(wide.refusal({ host: 'localhost:8931' })).toMatch(/^Invalid Host/)
    expect(wide.refusal({ host: 'mcp.example.com', origin: 'https://app.example.com' })).toBeUndefined()
    expect(wide.refusal({ host: 'mcp.example.com', origin: 'http://localhost:8931' })).toMatch(/^Invalid Origin/)
  })

  it('knows the loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) expect(isLoopback(h), h).toBe(true)
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', 'example.com', '128.0.0.1']) expect(isLoopback(h), h).toBe(false)
  })
})

describe('StaticTokens', () => {
  it('finds the principal of a configured token, of none else', () => {
    const tokens = new StaticTokens([
      { principal: 'ci-bot', token: 'a'.repeat(32) },
      { principal: 'ci-bot', token: 'b'.repeat(32) },
      { principal: 'ops', token: 'c'.repeat(40) },
    ])
    expect(tokens.find('a'.repeat(32))).toBe('ci-bot')
    expect(tokens.find('b'.repeat(32))).toBe('ci-bot')
    expect(tokens.find('c'.repeat(40))).toBe('ops')
    for (const t of ['a'.repeat(31), 'a'.repeat(33), '', 'c'.repeat(32)]) expect(tokens.find(t)).toBeUndefined()
    expect(tokens.principals()).toEqual(['ci-bot', 'ops'])
  })
})

describe('TokenCache', () => {
  it('keeps an entry until it expires', () => {
    let now = 1_000
    const cache = new TokenCache<string>(10, () => now)
    cache.set('t', 'alice', 2_000)
    expect(cache.get('t')).toBe('alice')
    now = 1_999
    expect(cache.get('t')).toBe('alice')
    now = 2_000
    expect(cache.get('t')).toBeUndefined()
    expect(cache.size).toBe(0)
    cache.set('old', 'bob', 1_500)
    expect(cache.size).toBe(0)
  })

  it('holds at most `max`, the least recently used going first', () => {
    const cache = new TokenCache<number>(3, () => 0)
    for (const k of ['a', 'b', 'c']) cache.set(k, 1, 10)
    expect(cache.get('a')).toBe(1)
    cache.set('d', 1, 10)
    expect(cache.size).toBe(3)
    expect(cache.get('b')).toBeUndefined()
    expect([cache.get('a'), cache.get('c'), cache.get('d')]).toEqual([1, 1, 1])
  })
})
