/** What `operator keygen`, `relay keygen` and `notary keygen` share: flags, writing the key file, and what to paste where. */
import { resolve } from 'node:path'
import { Flags } from '@oclif/core'
import { generateKeyPair, writeKeyFile, type KeyKind } from '../core/crypto/keys.js'
import { passphraseFrom } from './operator-key.js'

export const keygenFlags = {
  name: Flags.string({ required: true, description: 'Who the key belongs to: letters, digits and ._@- (e.g. alice, relay-1).' }),
  out: Flags.string({ helpValue: '<file>', description: 'Where to write the private key. Default: ./<name>.<kind>.key' }),
  force: Flags.boolean({ description: 'Replace an existing key file (the old key stops being usable wherever it was trusted).' }),
  'passphrase-env': Flags.string({ helpValue: '<VAR>', description: 'Encrypt the private key with the passphrase held in this environment variable.' }),
}

export interface KeygenResult {
  kind: KeyKind
  name: string
  publicKey: string
  path: string
  mode: '0600'
  encrypted: boolean
  /** What to paste into interlock.toml (operators), or hand to verifiers (relays). */
  toml: string
}

export function keygen(kind: KeyKind, flags: { name: string; out?: string; force?: boolean; 'passphrase-env'?: string }, env: NodeJS.ProcessEnv): KeygenResult {
  const passphrase = passphraseFrom(flags['passphrase-env'], env)
  const pair = generateKeyPair(kind, flags.name)
  const path = resolve(flags.out ?? `${flags.name}.${kind}.key`)
  writeKeyFile(path, pair, { passphrase, force: flags.force })
  const toml =
    kind === 'operator'
      ? `[[operators]]\nname = "${pair.name}"\npublic_key = "${pair.publicKey}"`
      : kind === 'service'
        ? `[notary.services]\n${pair.name} = "${pair.publicKey}"`
        : `# relay "${pair.name}" signs receipts with:\npublic_key = "${pair.publicKey}"`
  return { kind, name: pair.name, publicKey: pair.publicKey, path, mode: '0600', encrypted: passphrase !== undefined, toml }
}
