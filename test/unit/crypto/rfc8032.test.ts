/** RFC 8032 §7.1 test vectors through the exact functions Interlock signs and verifies with. */
import { describe, expect, it } from 'vitest'
import { publicKeyOf, signBytes, verifyBytes } from '../../../src/core/crypto/ed25519.js'
import { nativeSeedSigner, nativeVerifier } from '../../../src/core/crypto/native-ed25519.js'

const hex = (s: string) => new Uint8Array(Buffer.from(s.replace(/\s+/g, ''), 'hex'))
const toHex = (b: Uint8Array) => Buffer.from(b).toString('hex')

const VECTORS = [
  {
    name: 'TEST 1 (empty message)',
    secret: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
    public: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    message: '',
    signature:
      'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155' + '5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  },
  {
    name: 'TEST 2 (one byte)',
    secret: '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb',
    public: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c',
    message: '72',
    signature:
      '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da' + '085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
  },
  {
    name: 'TEST 3 (two bytes)',
    secret: 'c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7',
    public: 'fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025',
    message: 'af82',
    signature:
      '6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac' + '18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a',
  },
]

describe('ed25519 against RFC 8032 section 7.1', () => {
  for (const v of VECTORS) {
    it(`${v.name}: public key, signature and verification`, () => {
      const seed = hex(v.secret)
      expect(toHex(publicKeyOf(seed))).toBe(v.public)
      expect(toHex(signBytes(hex(v.message), seed))).toBe(v.signature)
      expect(verifyBytes(hex(v.signature), hex(v.message), hex(v.public))).toBe(true)
    })

    it(`${v.name}: any flipped bit of signature, message or key is refused`, () => {
      const sig = hex(v.signature)
      for (const i of [0, 31, 32, 63]) {
        const bad = sig.slice()
        bad[i]! ^= 0x01
        expect(verifyBytes(bad, hex(v.message), hex(v.public))).toBe(false)
      }
      const msg = v.message === '' ? hex('00') : hex(v.message)
      if (v.message !== '') msg[0]! ^= 0x80
      expect(verifyBytes(sig, msg, hex(v.public))).toBe(false)
      const pub = hex(v.public)
      pub[5]! ^= 0x10
      expect(verifyBytes(sig, hex(v.message), pub)).toBe(false)
    })
  }

  it('refuses malformed input with false, not a throw', () => {
    const v = VECTORS[0]!
    expect(verifyBytes(new Uint8Array(63), hex(v.message), hex(v.public))).toBe(false)
    expect(verifyBytes(hex(v.signature), hex(v.message), new Uint8Array(31))).toBe(false)
    // s >= L (non-canonical scalar) is refused under RFC 8032 rules.
    const sig = hex(v.signature)
    sig.fill(0xff, 32)
    expect(verifyBytes(sig, hex(v.message), hex(v.public))).toBe(false)
  })
})

describe('native ed25519 (node:crypto, the hot paths) against RFC 8032 section 7.1', () => {
  const signNative = nativeSeedSigner()
  const verifyNative = nativeVerifier()
  const keyText = (publicHex: string) => `ed25519:${Buffer.from(hex(publicHex)).toString('base64url')}`
  for (const v of VECTORS) {
    it(`${v.name}: the same signature from the bare seed, verified; flipped bits refused`, () => {
      const signature = signNative(hex(v.secret), hex(v.message))
      expect(toHex(new Uint8Array(Buffer.from(signature, 'base64url')))).toBe(v.signature)
      expect(verifyNative(keyText(v.public), hex(v.message), signature)).toBe(true)
      const bad = hex(v.signature)
      bad[40]! ^= 0x01
      expect(verifyNative(keyText(v.public), hex(v.message), Buffer.from(bad).toString('base64url'))).toBe(false)
      expect(verifyNative(keyText(v.public), hex(`${v.message}00`), signature)).toBe(false)
    })
  }

  it('refuses malformed input with false, not a throw', () => {
    const v = VECTORS[0]!
    expect(verifyNative('ed25519:short', hex(v.message), 'x')).toBe(false)
    expect(verifyNative(keyText(v.public), hex(v.message), Buffer.from(new Uint8Array(63)).toString('base64url'))).toBe(false)
    const sig = hex(v.signature)
    sig.fill(0xff, 32)
    expect(verifyNative(keyText(v.public), hex(v.message), Buffer.from(sig).toString('base64url'))).toBe(false)
  })
})
