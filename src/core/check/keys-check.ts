/**
 * The keys family:
 * - `keys.operators`: every [[operators]] public_key parses as an ed25519
 *   key, and no key is shared (config/policy.ts finds these; reported here);
 * - `keys.relay`: the relay's private key file exists, is a relay key, and
 *   is not readable by group or others (the relay itself refuses such a
 *   file: crypto/keys.ts loadPrivateKey). The file is only stat'ed and its
 *   public part parsed; the private key is never decrypted here. The file is
 *   [relay] key, else $INTERLOCK_RELAY_KEY, as `interlock relay` reads it; a
 *   PostgreSQL store (drained by relays) with neither is a warning.
 */
import { readFileSync, statSync } from 'node:fs'
import { dirname, isAbsolute, resolve } from 'node:path'
import { parseKeyFile } from '../crypto/keys.js'
import { FIX_OPERATOR_KEY } from './config-check.js'
import { fail, pass, warn } from './rows.js'
import type { CheckContext, CheckModule, CheckRow } from './types.js'

export const keysCheck: CheckModule = {
  family: 'keys',
  async run(ctx: CheckContext): Promise<CheckRow[]> {
    const OPS = 'operator public keys parse'
    const rows: CheckRow[] =
      ctx.operatorProblems.length > 0
        ? ctx.operatorProblems.map((p) => fail('keys.operators', OPS, p, FIX_OPERATOR_KEY))
        : [pass('keys.operators', OPS, ctx.config.operators.length === 0 ? 'no operators declared' : `${ctx.config.operators.map((o) => o.name).join(', ')}: ed25519 keys`)]
    const keyFile = relayKeyFile(ctx) ?? ctx.relayKeyEnv
    if (keyFile !== undefined) rows.push(checkRelayKey(keyFile))
    else if (ctx.config.store.kind === 'postgres') {
      // A shared outbox is drained by relays, and a relay signs every receipt: it will need a key.
      rows.push(warn('keys.relay', 'relay key exists and is private', 'no relay key configured ([relay] key, or INTERLOCK_RELAY_KEY)', 'Make one with `interlock relay keygen` and set [relay] key, unless no relay runs from this config.'))
    }
    return rows
  },
}

/** [relay] key, relative to the config file's folder; undefined when the file names none. */
function relayKeyFile(ctx: CheckContext): string | undefined {
  const relay = ctx.raw.relay as Record<string, unknown> | undefined
  const path = relay?.key
  if (typeof path !== 'string') return undefined
  return isAbsolute(path) ? path : resolve(dirname(ctx.config.file ?? '.'), path)
}

export function checkRelayKey(path: string): CheckRow {
  const NAME = 'relay key exists and is private'
  let mode: number
  try {
    mode = statSync(path).mode
  } catch (e) {
    return fail('keys.relay', NAME, `relay key ${path} cannot be read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, 'Make one with `interlock relay keygen` (mode 0600), or fix [relay] key.')
  }
  const octal = (mode & 0o777).toString(8).padStart(3, '0')
  if ((mode & 0o077) !== 0) {
    return fail('keys.relay', NAME, `relay key ${path} has mode ${octal}: readable by group or others, so the relay refuses it`, `Run \`chmod 600 ${path}\`; if others may have copied it, make a new relay key and rotate it.`)
  }
  try {
    const file = parseKeyFile(readFileSync(path, 'utf8'), path)
    if (file.kind !== 'relay') return fail('keys.relay', NAME, `${path} is an ${file.kind} key, not a relay key`, 'Point [relay] key at the relay\'s key (`interlock relay keygen`).')
    return pass('keys.relay', NAME, `${path}: relay key ${file.name} (${file.publicKey.slice(0, 20)}…), mode ${octal}${file.encrypted ? ', passphrase-protected' : ''}`)
  } catch (e) {
    return fail('keys.relay', NAME, (e as Error).message, 'Replace it with a key made by `interlock relay keygen`.')
  }
}
