/**
 * bench/relay/record-signing.ts: what signing every journal record costs.
 *
 * Per record, in alternating slices (so other load on the machine falls on
 * both sides alike):
 *   (a) the relay's signer on typical record data (crypto/record-signature.ts:
 *       canonical JSON, SHA-256, a native Ed25519 signature), and the
 *       COMMITTED record's, which also signs the receipt;
 *   (b) verify's check of one signed record (digest and native verification);
 *   (c) sequential gate.submit on a SQLite journal (four durable records per
 *       effect) without signing and with it: the cost as the gate sees it.
 *
 *   npx tsx bench/relay/record-signing.ts [--seconds 3]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { JsonObject } from '../../src/core/canonical-json.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { nativeVerifier } from '../../src/core/crypto/native-ed25519.js'
import { recordDataDigest, recordSignatureOf } from '../../src/core/crypto/record-signature.js'
import { statementBytes } from '../../src/core/crypto/sign.js'
import { Gate } from '../../src/core/gate.js'
import { relaySigner } from '../../src/core/relay/relay-signer.js'
import { openStore } from '../../src/core/stores/open.js'
import type { EffectTarget } from '../../src/core/targets/target.js'

const args = process.argv.slice(2)
const seconds = Number(args[args.indexOf('--seconds') + 1] || 0) || 3
const key = generateKeyPair('relay', 'bench')
const signer = relaySigner('relay-1', key, () => new Date())
const id = 'a'.repeat(64)
const dispatched: JsonObject = {}
const committed: JsonObject = { receipt: { id: 're_3MtwBwLkdIwHu7ix28a3tqPa', status: 'succeeded', amount: 1200, currency: 'usd' }, via: 'apply' }

/** Mean microseconds per call of fn over about `ms` milliseconds. */
function perCall(fn: () => void, ms: number): number {
  let n = 0
  const start = performance.now()
  while (performance.now() - start < ms) {
    for (let i = 0; i < 100; i++) fn()
    n += 100
  }
  return ((performance.now() - start) * 1000) / n
}

const noop: EffectTarget = { name: 'noop', tier: 1, validatePremises: async () => [], apply: async (e) => ({ ok: e.id }) }

async function submitsPerSecond(signing: boolean, ms: number, dir: string, slice: number): Promise<number> {
  const store = await openStore({ kind: 'sqlite', path: join(dir, `${signing ? 'signed' : 'plain'}-${slice}.db`) }, { autoInstall: true })
  const gate = new Gate({ store, targets: [noop], signing: signing ? { key, id: 'relay-1' } : undefined })
  let n = 0
  const start = performance.now()
  while (performance.now() - start < ms) await gate.submit({ thread: 'bench', target: 'noop', action: 'x', args: { n: n++ } })
  const rate = n / ((performance.now() - start) / 1000)
  await gate.close()
  await store.close()
  return rate
}

/** A record signature's binding to the record before it: that record's own signature (86 base64url characters). */
const FOLLOWS = 'f'.repeat(86)

async function main(): Promise<void> {
  const signedCommitted = signer.sign(id, 'DISPATCHED', 'COMMITTED', FOLLOWS, committed)
  const verify = nativeVerifier()
  const check = () => {
    const s = recordSignatureOf(signedCommitted)
    if (!s || s === 'malformed' || s.statement.dataDigest !== recordDataDigest(signedCommitted) || !verify(key.publicKey, statementBytes(s.statement), s.signature)) {
      throw new Error('the signature does not verify')
    }
  }
  const slices = 3
  const sign: number[] = []
  const signCommit: number[] = []
  const verifyUs: number[] = []
  const plain: number[] = []
  const signed: number[] = []
  const dir = mkdtempSync(join(tmpdir(), 'interlock-bench-signing-'))
  try {
    for (let s = 0; s < slices; s++) {
      const ms = (seconds * 1000) / slices
      sign.push(perCall(() => signer.sign(id, 'AUTHORIZED', 'DISPATCHED', FOLLOWS, dispatched), ms / 4))
      signCommit.push(perCall(() => signer.sign(id, 'DISPATCHED', 'COMMITTED', FOLLOWS, committed), ms / 4))
      verifyUs.push(perCall(check, ms / 4))
      plain.push(await submitsPerSecond(false, ms, dir, s))
      signed.push(await submitsPerSecond(true, ms, dir, s))
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
  const us = (x: number) => `${x.toFixed(1)} µs`
  console.log(`sign one record (DISPATCHED):             ${us(mean(sign))}`)
  console.log(`sign a COMMITTED record (receipt too):    ${us(mean(signCommit))}`)
  console.log(`verify one signed record:                 ${us(mean(verifyUs))}`)
  const p = mean(plain)
  const q = mean(signed)
  console.log(`gate.submit on SQLite, unsigned:          ${p.toFixed(0)} effects/s (4 records each)`)
  console.log(`gate.submit on SQLite, every record signed: ${q.toFixed(0)} effects/s; signed ÷ unsigned = ${(q / p).toFixed(2)}`)
}

await main()
