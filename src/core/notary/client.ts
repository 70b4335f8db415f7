/**
 * A party's client of the notary: reads attempts, and writes records signed
 * with its own key after the chain's head (re-signing when the head moved on
 * meanwhile). Every failure to get an answer is a NotaryUnreachable, which
 * both sides treat as "do not guess" (docs/notary.md).
 */
import type { JsonObject } from '../canonical-json.js'
import type { KeyPair } from '../crypto/keys.js'
import { InterlockError, ExitCode } from '../errors.js'
import type { EffectView, WriteAnswer } from './log.js'
import { signRecord, type NotaryKind } from './records.js'
import type { AttemptView } from './state.js'

export class NotaryUnreachable extends InterlockError {
  constructor(url: string, why: string, cause?: unknown) {
    super('E_NOTARY_UNREACHABLE', ExitCode.TARGET, `the notary at ${url} did not answer: ${why}`, {
      hint: 'Check that `interlock notary serve` runs there and that [notary] listen and the notary URL agree.',
      context: { url },
      cause,
    })
  }
}

export interface NotaryClientOptions {
  url: string
  /** The writer's name as [notary] trusts it, and its key. */
  writer: string
  key: Pick<KeyPair, 'seed'>
  timeoutMs?: number
  now?: () => Date
}

export interface NotaryClient {
  readonly url: string
  effect(effect: string): Promise<EffectView>
  attempt(effect: string, attempt: number): Promise<AttemptView & { head: string }>
  /** Signs and writes `kind`; `head` when the caller already knows it (saves a read). */
  write(effect: string, attempt: number, kind: NotaryKind, body?: JsonObject, head?: string): Promise<WriteAnswer>
}

const STALE_TRIES = 8

export function notaryClient(opts: NotaryClientOptions): NotaryClient {
  const base = opts.url.replace(/\/+$/, '')
  const timeoutMs = opts.timeoutMs ?? 5000
  const now = opts.now ?? (() => new Date())
  const call = async <T>(path: string, init?: { method: string; body: string }): Promise<T> => {
    let res: Response
    try {
      res = await fetch(`${base}${path}`, {
        method: init?.method ?? 'GET',
        body: init?.body,
        headers: init ? { 'content-type': 'application/json' } : undefined,
        signal: AbortSignal.timeout(timeoutMs),
      })
    } catch (err) {
      throw new NotaryUnreachable(base, err instanceof Error ? err.message : String(err), err)
    }
    const text = await res.text().catch(() => '')
    if (res.status >= 500 || (res.status === 404 && !init)) throw new NotaryUnreachable(base, `HTTP ${res.status} ${text.slice(0, 200)}`)
    try {
      return JSON.parse(text) as T
    } catch (err) {
      throw new NotaryUnreachable(base, `an answer that is not JSON (HTTP ${res.status})`, err)
    }
  }
  const client: NotaryClient = {
    url: base,
    effect: (effect) => call<EffectView>(`/v1/effects/${effect}`),
    attempt: (effect, n) => call<AttemptView & { head: string }>(`/v1/effects/${effect}/attempts/${n}`),
    async write(effect, attempt, kind, body = {}, head) {
      let prev = head ?? (await client.effect(effect)).head
      for (let tries = 1; ; tries++) {
        const record = signRecord({ effect, attempt, kind, writer: opts.writer, at: now().toISOString(), body, prev }, opts.key)
        const answer = await call<WriteAnswer>('/v1/records', { method: 'POST', body: JSON.stringify(record) })
        if (answer.status !== 'stale' || tries >= STALE_TRIES) return answer
        prev = answer.head
      }
    },
  }
  return client
}
