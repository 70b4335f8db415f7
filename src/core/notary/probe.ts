/**
 * What `interlock check` asks a notary, writing nothing: /healthz, then
 * whether it trusts this agent's key. The trust question is a signed
 * `intend` for a probe effect that deliberately does not follow its chain's
 * head: the log checks the writer and the signature before the head
 * (log.ts), so a trusted agent is told `stale` and nothing is written, and
 * an untrusted one `untrusted` (or `forged` for a different key under its name).
 */
import type { KeyPair } from '../crypto/keys.js'
import { sha256Hex } from '../hash.js'
import { signRecord } from './records.js'

export interface NotaryProbe {
  ok: boolean
  detail: string
  fix?: string
}

const NOT_A_HEAD = 'f'.repeat(64)

export async function probeNotary(url: string, key: Pick<KeyPair, 'name' | 'seed'>, signal?: AbortSignal): Promise<NotaryProbe> {
  const base = url.replace(/\/+$/, '')
  let health: Response
  try {
    health = await fetch(`${base}/healthz`, { signal })
  } catch (err) {
    return { ok: false, detail: `the notary at ${base} did not answer: ${err instanceof Error ? err.message : String(err)}`, fix: 'Check that `interlock notary serve` runs there and that its [notary] listen and this target\'s notary URL agree.' }
  }
  if (health.status !== 200) {
    return { ok: false, detail: `the notary at ${base} answered /healthz with HTTP ${health.status}: ${(await health.text().catch(() => '')).slice(0, 200)}`, fix: 'Look at the notary\'s log: its store does not answer.' }
  }
  const record = signRecord({ effect: sha256Hex('interlock check: notary trust probe'), attempt: 1, kind: 'intend', writer: key.name, at: new Date().toISOString(), body: {}, prev: NOT_A_HEAD }, key)
  let answer: { status?: string; reason?: string }
  try {
    const res = await fetch(`${base}/v1/records`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(record), signal })
    answer = (await res.json()) as typeof answer
  } catch (err) {
    return { ok: false, detail: `the notary at ${base} did not answer a record: ${err instanceof Error ? err.message : String(err)}`, fix: 'Check that the URL points at `interlock notary serve`.' }
  }
  if (answer.status === 'stale') return { ok: true, detail: `${base} is healthy and trusts agent ${key.name}` }
  if (answer.status === 'untrusted' || answer.status === 'forged') {
    return {
      ok: false,
      detail: `${base} is healthy but does not trust agent ${key.name}'s key (${answer.status}): every notarized effect would be refused before it is sent`,
      fix: `Add ${key.name} = "<public key of the [relay] key>" under [notary.agents] in the notary's interlock.toml and restart it.`,
    }
  }
  return { ok: false, detail: `${base} answered a probe record with ${String(answer.status)}${answer.reason ? `: ${answer.reason}` : ''}`, fix: 'Check that the URL points at `interlock notary serve`.' }
}
