/** Key files (mode, encryption, format) and statement signatures (domain separation, canonical bytes). */
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  effectDigest,
  generateKeyPair,
  loadPrivateKey,
  newNonce,
  parsePublicKey,
  signStatement,
  verifyStatement,
  writeKeyFile,
  type DenialStatement,
  type ReleaseStatement,
} from '../../../src/core/crypto/index.js'
import { InterlockError } from '../../../src/core/errors.js'

const dir = () => mkdtempSync(join(tmpdir(), 'interlock-keys-'))

function release(over: Partial<ReleaseStatement> = {}): ReleaseStatement {
  return {
    kind: 'release',
    effectId: 'e'.repeat(64),
    digest: effectDigest({ target: 'payments', action: 'refund', args: { amount: '900.00' }, premises: {} }),
    operator: 'alice',
    rule: 'big-refunds',
    signedAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-01T01:00:00.000Z',
    nonce: newNonce(),
    ...over,
  }
}

function thrown(fn: () => unknown): InterlockError {
  try {
    fn()
  } catch (e) {
    if (e instanceof InterlockError) return e
    throw e
  }
  throw new Error('did not throw')
}

describe('key files', () => {
  it('are written with mode 0600 and load back to the same key pair', () => {
    const path = join(dir(), 'alice.key')
    const pair = generateKeyPair('operator', 'alice')
    writeKeyFile(path, pair)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    const loaded = loadPrivateKey(path)
    expect(loaded.publicKey).toBe(pair.publicKey)
    expect(Buffer.from(loaded.seed).equals(Buffer.from(pair.seed))).toBe(true)
    expect(loaded).toMatchObject({ kind: 'operator', name: 'alice' })
    expect(parsePublicKey(pair.publicKey)).toHaveLength(32)
  })

  it('are refused when readable by group or others, naming the file, the mode and chmod 600', () => {
    const path = join(dir(), 'alice.key')
    writeKeyFile(path, generateKeyPair('operator', 'alice'))
    for (const mode of [0o640, 0o604, 0o644]) {
      chmodSync(path, mode)
      const e = thrown(() => loadPrivateKey(path))
      expect(e.code).toBe('E_KEY_MODE')
      expect(e.message).toContain(path)
      expect(e.message).toContain(mode.toString(8))
      expect(e.hint).toContain(`chmod 600 ${path}`)
    }
  })

  it('are never overwritten without force', () => {
    const path = join(dir(), 'k.key')
    writeKeyFile(path, generateKeyPair('relay', 'r1'))
    expect(thrown(() => writeKeyFile(path, generateKeyPair('relay', 'r1'))).code).toBe('E_KEY_EXISTS')
    const next = generateKeyPair('relay', 'r1')
    writeKeyFile(path, next, { force: true })
    expect(loadPrivateKey(path).publicKey).toBe(next.publicKey)
    expect(statSync(path).mode & 0o777).toBe(0o600)
  })

  it('encrypted with a passphrase, keep the seed out of the file and need the passphrase', () => {
    const path = join(dir(), 'enc.key')
    const pair = generateKeyPair('operator', 'bob')
    writeKeyFile(path, pair, { passphrase: 'correct horse' })
    const text = readFileSync(path, 'utf8')
    expect(text).not.toContain(Buffer.from(pair.seed).toString('base64url'))
    expect(JSON.parse(text).encrypted.kdf).toBe('scrypt')
    expect(thrown(() => loadPrivateKey(path)).code).toBe('E_KEY_PASSPHRASE')
    expect(thrown(() => loadPrivateKey(path, { passphrase: 'wrong' })).code).toBe('E_KEY_PASSPHRASE')
    expect(loadPrivateKey(path, { passphrase: 'correct horse' }).publicKey).toBe(pair.publicKey)
  })

  it('whose public key does not match the seed, or that are not key files, are refused', () => {
    const d = dir()
    const path = join(d, 'k.key')
    writeKeyFile(path, generateKeyPair('operator', 'alice'))
    const file = JSON.parse(readFileSync(path, 'utf8'))
    file.publicKey = generateKeyPair('operator', 'mallory').publicKey
    const swapped = join(d, 'swapped.key')
    writeFileSync(swapped, JSON.stringify(file), { mode: 0o600 })
    expect(thrown(() => loadPrivateKey(swapped)).code).toBe('E_KEY_FILE')
    const junk = join(d, 'junk.key')
    writeFileSync(junk, 'not json', { mode: 0o600 })
    expect(thrown(() => loadPrivateKey(junk)).code).toBe('E_KEY_FILE')
    expect(thrown(() => loadPrivateKey(join(d, 'absent.key'))).code).toBe('E_KEY_NOT_FOUND')
  })
})

describe('statement signatures', () => {
  const alice = generateKeyPair('operator', 'alice')
  const bob = generateKeyPair('operator', 'bob')

  it('verify for the signer only, and for exactly the signed statement', () => {
    const s = signStatement(release(), alice.seed)
    expect(verifyStatement(s.statement, s.signature, alice.publicKey)).toBe(true)
    expect(verifyStatement(s.statement, s.signature, bob.publicKey)).toBe(false)
    expect(verifyStatement({ ...s.statement, expiresAt: '2027-01-01T00:00:00.000Z' }, s.signature, alice.publicKey)).toBe(false)
  })

  it('do not depend on key order (canonical JSON)', () => {
    const st = release()
    const s = signStatement(st, alice.seed)
    const reordered = Object.fromEntries(Object.entries(st).reverse()) as unknown as ReleaseStatement
    expect(verifyStatement(reordered, s.signature, alice.publicKey)).toBe(true)
  })

  it('of one kind never verify as another (domain separation)', () => {
    const denial: DenialStatement = { kind: 'denial', effectId: 'e'.repeat(64), digest: 'd', operator: 'alice', reason: 'no', signedAt: 'x', nonce: 'n' }
    const s = signStatement(denial, alice.seed)
    expect(verifyStatement({ ...denial, kind: 'release' } as unknown as ReleaseStatement, s.signature, alice.publicKey)).toBe(false)
  })

  it('malformed signatures and keys are false, not a throw', () => {
    const s = signStatement(release(), alice.seed)
    expect(verifyStatement(s.statement, 'not base64!', alice.publicKey)).toBe(false)
    expect(verifyStatement(s.statement, s.signature.slice(2), alice.publicKey)).toBe(false)
    expect(verifyStatement(s.statement, s.signature, 'ed25519:short')).toBe(false)
    expect(verifyStatement(s.statement, s.signature, alice.publicKey.replace('ed25519:', 'rsa:'))).toBe(false)
  })
})

describe('effect digest', () => {
  it('changes with args, premises, target or action, not with key order', () => {
    const base = { target: 'payments', action: 'refund', args: { amount: '900.00', currency: 'USD' }, premises: { charge: 'ch_1' } }
    const d = effectDigest(base)
    expect(effectDigest({ ...base, args: { currency: 'USD', amount: '900.00' } })).toBe(d)
    expect(effectDigest({ ...base, args: { amount: '900.01', currency: 'USD' } })).not.toBe(d)
    expect(effectDigest({ ...base, premises: { charge: 'ch_2' } })).not.toBe(d)
    expect(effectDigest({ ...base, target: 'other' })).not.toBe(d)
    expect(effectDigest({ ...base, action: 'charge' })).not.toBe(d)
    expect(d).toMatch(/^[0-9a-f]{64}$/)
  })
})
