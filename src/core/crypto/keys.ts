/**
 * Ed25519 key pairs for operators (who sign releases, denials and
 * resolutions) and relays (who sign receipts).
 *
 * Key file: UTF-8 JSON, written with mode 0600 and never overwritten unless
 * asked to:
 *   { "format": "interlock-key/v1", "kind": "operator" | "relay", "name",
 *     "publicKey": "ed25519:<base64url>", "createdAt",
 *     "privateKey": "<base64url 32-byte seed>"            -- plain, or
 *     "encrypted": { "kdf": "scrypt", "N", "r", "p", "salt", "cipher": "aes-256-gcm", "iv", "tag", "data" } }
 * The public key is kept in clear beside an encrypted seed, so `show`-like
 * uses never need the passphrase, and it is checked against the seed on load.
 *
 * A private key file readable by group or others is refused at use (like ssh):
 * a key others could copy signs for its owner.
 */
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto'
import { closeSync, existsSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs'
import { ExitCode, InterlockError } from '../errors.js'
import { publicKeyOf, randomSeed } from './ed25519.js'
import { fromBase64Url, toBase64Url } from './encoding.js'

export const KEY_FORMAT = 'interlock-key/v1'
/** service: a notarized service's key, which signs its claim, performed and failed records (docs/notary.md). */
export type KeyKind = 'operator' | 'relay' | 'service'

export interface KeyPair {
  kind: KeyKind
  name: string
  /** Text form `ed25519:<base64url>`: what interlock.toml carries. */
  publicKey: string
  /** The 32-byte RFC 8032 secret seed. */
  seed: Uint8Array
}

export interface EncryptedSeed {
  kdf: 'scrypt'
  N: number
  r: number
  p: number
  salt: string
  cipher: 'aes-256-gcm'
  iv: string
  tag: string
  data: string
}

export interface KeyFile {
  format: typeof KEY_FORMAT
  kind: KeyKind
  name: string
  publicKey: string
  createdAt: string
  privateKey?: string
  encrypted?: EncryptedSeed
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/
const PUBLIC_PREFIX = 'ed25519:'
// scrypt cost: about 50 ms and 16 MiB here; a key is unlocked once per command.
const SCRYPT = { N: 1 << 14, r: 8, p: 1 }

export function assertKeyName(name: string): void {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new InterlockError('E_USAGE', ExitCode.USAGE, `key name ${JSON.stringify(name)} must be 1-100 letters, digits or ._@- starting with a letter or digit`)
  }
}

export function generateKeyPair(kind: KeyKind, name: string, seed: Uint8Array = randomSeed()): KeyPair {
  assertKeyName(name)
  return { kind, name, publicKey: formatPublicKey(publicKeyOf(seed)), seed }
}

export function formatPublicKey(raw: Uint8Array): string {
  return PUBLIC_PREFIX + toBase64Url(raw)
}

/** The raw 32 bytes of `ed25519:<base64url>`, or undefined when the text is not one. */
export function parsePublicKey(text: string): Uint8Array | undefined {
  if (typeof text !== 'string' || !text.startsWith(PUBLIC_PREFIX)) return undefined
  const raw = fromBase64Url(text.slice(PUBLIC_PREFIX.length))
  return raw && raw.length === 32 ? raw : undefined
}

export function keyFileText(pair: KeyPair, options: { passphrase?: string; now?: Date } = {}): string {
  const file: KeyFile = {
    format: KEY_FORMAT,
    kind: pair.kind,
    name: pair.name,
    publicKey: pair.publicKey,
    createdAt: (options.now ?? new Date()).toISOString(),
  }
  if (options.passphrase !== undefined) file.encrypted = encryptSeed(pair.seed, options.passphrase)
  else file.privateKey = toBase64Url(pair.seed)
  return `${JSON.stringify(file, null, 2)}\n`
}

/**
 * Writes the private key file with mode 0600 from its first byte (the file is
 * created with that mode, so it is never readable by others, not even briefly).
 * Refuses an existing file unless `force`.
 */
export function writeKeyFile(path: string, pair: KeyPair, options: { passphrase?: string; force?: boolean; now?: Date } = {}): void {
  const text = keyFileText(pair, options)
  if (existsSync(path)) {
    if (!options.force) {
      throw new InterlockError('E_KEY_EXISTS', ExitCode.CONFLICT, `key file ${path} already exists; not overwriting it`, {
        hint: 'Choose another --out, or pass --force to replace it (the old key stops working wherever it is trusted).',
        context: { path },
      })
    }
    unlinkSync(path)
  }
  let fd: number
  try {
    fd = openSync(path, 'wx', 0o600)
  } catch (cause) {
    throw new InterlockError('E_KEY_FILE', ExitCode.FAILURE, `cannot create key file ${path}: ${(cause as Error).message}`, { cause, context: { path } })
  }
  try {
    writeSync(fd, text)
  } finally {
    closeSync(fd)
  }
}

export interface LoadKeyOptions {
  passphrase?: string
  /** Skip the mode check (tests of the format only; never the CLI). */
  ignoreMode?: boolean
}

/** Reads a private key file, refusing one readable by group or others. */
export function loadPrivateKey(path: string, options: LoadKeyOptions = {}): KeyPair {
  let mode: number
  try {
    mode = statSync(path).mode
  } catch (cause) {
    throw new InterlockError('E_KEY_NOT_FOUND', ExitCode.NOT_FOUND, `key file ${path} cannot be read: ${(cause as Error).message}`, {
      hint: 'Pass the key with --key <file> or INTERLOCK_OPERATOR_KEY; make one with `interlock operator keygen --name <you>`.',
      context: { path },
      cause,
    })
  }
  if (!options.ignoreMode && (mode & 0o077) !== 0) {
    const octal = (mode & 0o777).toString(8).padStart(3, '0')
    throw new InterlockError('E_KEY_MODE', ExitCode.CONFIG, `key file ${path} has mode ${octal}: it is readable by group or others, so it is refused`, {
      hint: `Run \`chmod 600 ${path}\`; if others may have copied it, make a new key and replace the old one in interlock.toml.`,
      context: { path, mode: octal },
    })
  }
  const file = parseKeyFile(readFileSync(path, 'utf8'), path)
  let seed: Uint8Array
  if (file.encrypted) {
    if (options.passphrase === undefined) {
      throw new InterlockError('E_KEY_PASSPHRASE', ExitCode.USAGE, `key file ${path} is encrypted; a passphrase is needed`, {
        hint: 'Pass --passphrase-env <VAR> naming an environment variable that holds it.',
        context: { path },
      })
    }
    seed = decryptSeed(file.encrypted, options.passphrase, path)
  } else {
    const s = fromBase64Url(file.privateKey ?? '')
    if (!s || s.length !== 32) throw badFile(path, 'its privateKey is not a base64url 32-byte seed')
    seed = s
  }
  const derived = formatPublicKey(publicKeyOf(seed))
  if (derived !== file.publicKey) throw badFile(path, 'its publicKey does not belong to its private key')
  return { kind: file.kind, name: file.name, publicKey: file.publicKey, seed }
}

export function parseKeyFile(text: string, path: string): KeyFile {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch {
    throw badFile(path, 'it is not JSON')
  }
  const f = v as Partial<KeyFile>
  if (!f || typeof f !== 'object' || f.format !== KEY_FORMAT) throw badFile(path, `its format is not ${KEY_FORMAT}`)
  if (f.kind !== 'operator' && f.kind !== 'relay' && f.kind !== 'service') throw badFile(path, 'its kind is not operator, relay or service')
  if (typeof f.name !== 'string' || !NAME.test(f.name)) throw badFile(path, 'its name is missing or malformed')
  if (typeof f.publicKey !== 'string' || !parsePublicKey(f.publicKey)) throw badFile(path, 'its publicKey is not ed25519:<base64url>')
  if ((f.privateKey === undefined) === (f.encrypted === undefined)) throw badFile(path, 'it must hold exactly one of privateKey and encrypted')
  return f as KeyFile
}

function encryptSeed(seed: Uint8Array, passphrase: string): EncryptedSeed {
  if (passphrase.length === 0) throw new InterlockError('E_USAGE', ExitCode.USAGE, 'the passphrase is empty')
  const salt = randomBytes(16)
  const iv = randomBytes(12)
  const key = scryptSync(passphrase.normalize('NFC'), salt, 32, { ...SCRYPT, maxmem: 64 * 1024 * 1024 })
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  const data = Buffer.concat([cipher.update(seed), cipher.final()])
  return {
    kdf: 'scrypt',
    ...SCRYPT,
    salt: toBase64Url(salt),
    cipher: 'aes-256-gcm',
    iv: toBase64Url(iv),
    tag: toBase64Url(cipher.getAuthTag()),
    data: toBase64Url(data),
  }
}

function decryptSeed(e: EncryptedSeed, passphrase: string, path: string): Uint8Array {
  const salt = fromBase64Url(e.salt)
  const iv = fromBase64Url(e.iv)
  const tag = fromBase64Url(e.tag)
  const data = fromBase64Url(e.data)
  if (e.kdf !== 'scrypt' || e.cipher !== 'aes-256-gcm' || !salt || !iv || !tag || !data) throw badFile(path, 'its encrypted block is malformed')
  if (![e.N, e.r, e.p].every((n) => Number.isInteger(n) && n > 0) || e.N > 1 << 20) throw badFile(path, 'its scrypt parameters are out of range')
  const key = scryptSync(passphrase.normalize('NFC'), salt, 32, { N: e.N, r: e.r, p: e.p, maxmem: 1024 * 1024 * 1024 })
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv)
    decipher.setAuthTag(tag)
    const seed = new Uint8Array(Buffer.concat([decipher.update(data), decipher.final()]))
    if (seed.length !== 32) throw new Error('bad length')
    return seed
  } catch {
    throw new InterlockError('E_KEY_PASSPHRASE', ExitCode.USAGE, `the passphrase does not unlock key file ${path}`, { context: { path } })
  }
}

function badFile(path: string, why: string): InterlockError {
  return new InterlockError('E_KEY_FILE', ExitCode.CONFIG, `key file ${path} is not an Interlock key: ${why}`, {
    hint: 'Make one with `interlock operator keygen` or `interlock relay keygen`.',
    context: { path },
  })
}

