import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalJson, identityJson } from '../../src/core/canonical-json.js'
import { effectId, toEffect } from '../../src/core/effect.js'

function shuffleKeys(v: unknown, seed: number): unknown {
  if (Array.isArray(v)) return v.map((x, i) => shuffleKeys(x, seed + i))
  if (v && typeof v === 'object') {
    const entries = Object.entries(v)
    // A deterministic rotation keyed by the seed: a different insertion order.
    const k = entries.length ? seed % entries.length : 0
    const rotated = [...entries.slice(k), ...entries.slice(0, k)].reverse()
    return Object.fromEntries(rotated.map(([key, val], i) => [key, shuffleKeys(val, seed + i)]))
  }
  return v
}

describe('canonicalJson', () => {
  it('is the same whatever the key order', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), (v, seed) => {
        expect(canonicalJson(shuffleKeys(v, seed))).toBe(canonicalJson(v))
      }),
    )
  })

  it('round-trips: parsing its output and canonicalising again gives the same text', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = canonicalJson(v)
        expect(canonicalJson(JSON.parse(text))).toBe(text)
      }),
    )
  })

  it('writes every string exactly as given: composed and decomposed text stay apart, lone surrogates survive', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (k, v) => {
        const parsed = JSON.parse(canonicalJson({ [k]: [v] })) as Record<string, string[]>
        expect(Object.keys(parsed)).toEqual([k])
        expect(parsed[k]![0]).toBe(v)
      }),
    )
    expect(canonicalJson('Cafe\u0301')).toBe('"Cafe\u0301"')
    expect(canonicalJson('Cafe\u0301')).not.toBe(canonicalJson('Caf\u00e9'))
    expect(canonicalJson({ 'e\u0301': 1, '\u00e9': 2 })).toBe('{"e\u0301":1,"\u00e9":2}')
    expect(canonicalJson('a\ud800b')).toBe('"a\\ud800b"')
  })

  it('identityJson treats composed and decomposed Unicode as the same text, and refuses keys that collide under NFC', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (s) => {
        const nfc = s.normalize('NFC')
        const nfd = s.normalize('NFD')
        expect(identityJson({ [nfd]: nfd })).toBe(identityJson({ [nfc]: nfc }))
      }),
    )
    expect(identityJson('Ame\u0301lie')).toBe(identityJson('Am\u00e9lie'))
    expect(() => identityJson({ a: { 'e\u0301': 1, '\u00e9': 2 } })).toThrow(/\$\.a: keys .* collide after Unicode normalization/)
  })

  it('writes text in NFC as identityJson does: the plain-JSON path and the careful one agree', () => {
    // identityJson takes the careful path for any text beyond ASCII; on text NFC leaves alone the two give the same bytes.
    for (const stringUnit of ['grapheme', 'binary', 'grapheme-ascii'] as const) {
      fc.assert(
        fc.property(fc.jsonValue({ depthSize: 'medium', stringUnit }), fc.nat(), (v, seed) => {
          const nfcStable = (x: unknown): boolean =>
            typeof x === 'string' ? x.normalize('NFC') === x : Array.isArray(x) ? x.every(nfcStable) : x !== null && typeof x === 'object' ? Object.entries(x).every(([k, y]) => nfcStable(k) && nfcStable(y)) : true
          fc.pre(nfcStable(v))
          expect(canonicalJson(shuffleKeys(v, seed))).toBe(identityJson(v))
        }),
      )
    }
    expect(canonicalJson({ b: [1, { d: undefined, c: -0 }], a: 'x', e: Object.assign(Object.create(null), { z: true, y: null }) })).toBe(
      '{"a":"x","b":[1,{"c":0}],"e":{"y":null,"z":true}}',
    )
    expect(() => canonicalJson({ a: [undefined] })).toThrow(/\$\.a\[0\]: a undefined is not JSON/)
    // A lone surrogate is written as an ASCII escape, and NFC leaves it alone.
    expect(identityJson({ k: 'a\ud800b' })).toBe('{"k":"a\\ud800b"}')
    expect(identityJson({ 'e\u0301': 1 })).toBe('{"\u00e9":1}')
    expect(() => identityJson({ a: [1, Number.POSITIVE_INFINITY] })).toThrow(/\$\.a\[1\]/)
  })

  it('writes one form per number', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (n) => {
        const text = canonicalJson(n)
        expect(Number(text)).toBe(Object.is(n, -0) ? 0 : n)
        expect(canonicalJson(Number(text))).toBe(text)
        expect(canonicalJson(JSON.parse(JSON.stringify(n)))).toBe(text)
      }),
    )
    expect(canonicalJson([1.0, 1e0, 100e-2, -0])).toBe('[1,1,1,0]')
    expect(canonicalJson(1e21)).toBe('1e+21')
  })

  it('refuses what JSON cannot say, naming where', () => {
    expect(() => canonicalJson({ a: [1, Number.NaN] })).toThrow(/\$\.a\[1\]/)
    expect(() => canonicalJson({ a: new Date() })).toThrow(/Date object is not JSON/)
    expect(() => canonicalJson({ a: 10n })).toThrow(/bigint is not JSON/)
  })

  it('sorts keys by UTF-16 code units (RFC 8785)', () => {
    expect(canonicalJson({ b: 1, a: 2, '\u20ac': 3, '\ud83d\ude00': 4, '\u0080': 5 })).toBe(
      // U+20AC (0x20AC) sorts before U+1F600, whose first UTF-16 unit is 0xD83D.
      '{"a":2,"b":1,"\u0080":5,"\u20ac":3,"\ud83d\ude00":4}',
    )
  })
})

describe('effect id', () => {
  const base = { thread: 't1', target: 'payments', action: 'refund', args: { charge: 'ch_1', amount: '10.00' } }

  it('is the documented hash', async () => {
    const { createHash } = await import('node:crypto')
    const expected = createHash('sha256')
      .update('{"action":"refund","args":{"amount":"10.00","charge":"ch_1"},"key":null,"target":"payments","thread":"t1"}')
      .digest('hex')
    expect(effectId(base)).toBe(expected)
  })

  it('ignores premises and key order, and changes with any identifying field', () => {
    const id = toEffect(base).id
    expect(toEffect({ ...base, args: { amount: '10.00', charge: 'ch_1' }, premises: { x: 1 } }).id).toBe(id)
    expect(toEffect({ ...base, thread: 't2' }).id).not.toBe(id)
    expect(toEffect({ ...base, target: 'other' }).id).not.toBe(id)
    expect(toEffect({ ...base, action: 'charge' }).id).not.toBe(id)
    expect(toEffect({ ...base, args: { charge: 'ch_1', amount: '10.01' } }).id).not.toBe(id)
    expect(toEffect({ ...base, key: 'second' }).id).not.toBe(id)
  })

  it('is the same for composed and decomposed text, while the effect keeps the args exactly as given', () => {
    const decomposed = toEffect({ ...base, args: { note: 'Cafe\u0301', 'cle\u0301': 1 } })
    const composed = toEffect({ ...base, args: { note: 'Caf\u00e9', 'cl\u00e9': 1 } })
    expect(decomposed.id).toBe(composed.id)
    expect(decomposed.args).toEqual({ note: 'Cafe\u0301', 'cle\u0301': 1 })
    expect(Object.keys(decomposed.args)).toEqual(['note', 'cle\u0301'])
    expect(() => toEffect({ ...base, args: { 'e\u0301': 1, '\u00e9': 2 } })).toThrow(/collide after Unicode normalization/)
  })

  it('refuses a malformed effect, naming the field', () => {
    expect(() => toEffect({ ...base, thread: '' })).toThrow(/effect\.thread/)
    expect(() => toEffect({ ...base, args: [] as never })).toThrow(/effect\.args/)
    expect(() => toEffect({ ...base, args: { n: Number.POSITIVE_INFINITY } })).toThrow(/\$\.n/)
  })
})

describe('effect digest (what an operator signs)', () => {
  it('is over the args exactly as they will be sent: composed and decomposed text sign differently', async () => {
    const { effectDigest } = await import('../../src/core/crypto/digest.js')
    const effect = (note: string) => ({ target: 'mail', action: 'send', args: { note }, premises: { seen: note } })
    expect(effectDigest(effect('Cafe\u0301'))).not.toBe(effectDigest(effect('Caf\u00e9')))
    expect(effectDigest(effect('Cafe\u0301'))).toBe(effectDigest(JSON.parse(JSON.stringify(effect('Cafe\u0301')))))
  })
})
