/**
 * The operator's side of the terminal: which key file to sign with (--key or
 * $INTERLOCK_OPERATOR_KEY), its passphrase (from the environment variable
 * --passphrase-env names, never from a flag value that would sit in shell
 * history), and a yes/no confirmation that only a person at a terminal can give.
 */
import { createInterface } from 'node:readline/promises'
import { Flags } from '@oclif/core'
import { loadPrivateKey, type KeyPair } from '../core/crypto/keys.js'
import { UsageError } from '../core/errors.js'

export const OPERATOR_KEY_ENV = 'INTERLOCK_OPERATOR_KEY'

export const keyFlags = {
  key: Flags.string({
    env: OPERATOR_KEY_ENV,
    helpValue: '<file>',
    description: 'Your operator key file (from `interlock operator keygen`), or set INTERLOCK_OPERATOR_KEY.',
  }),
  'passphrase-env': Flags.string({
    helpValue: '<VAR>',
    description: 'Name of the environment variable holding the key file\'s passphrase, when it is encrypted.',
  }),
}

export function passphraseFrom(varName: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (varName === undefined) return undefined
  const value = env[varName]
  if (value === undefined || value === '') {
    throw new UsageError(`--passphrase-env names ${varName}, which is not set`, { hint: `Set it first, e.g. \`read -s ${varName} && export ${varName}\`.` })
  }
  return value
}

export function operatorKey(flags: { key?: string; 'passphrase-env'?: string }, env: NodeJS.ProcessEnv): KeyPair {
  if (!flags.key) {
    throw new UsageError('no operator key given', {
      hint: `Pass --key <file> or set ${OPERATOR_KEY_ENV}; make a key with \`interlock operator keygen --name <you>\`.`,
    })
  }
  return loadPrivateKey(flags.key, { passphrase: passphraseFrom(flags['passphrase-env'], env) })
}

/**
 * Asks on the terminal; without one, only --yes can confirm (a script must
 * say so explicitly). The question goes to stderr so --json output stays clean.
 */
export async function confirm(question: string, yes: boolean): Promise<boolean> {
  if (yes) return true
  if (!process.stdin.isTTY) {
    throw new UsageError('confirmation needed, and there is no terminal to ask on', { hint: 'Run it in a terminal, or pass --yes to confirm.' })
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr })
  try {
    const answer = await rl.question(`${question} [y/N] `)
    return /^y(es)?$/i.test(answer.trim())
  } finally {
    rl.close()
  }
}
