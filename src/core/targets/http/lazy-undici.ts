/**
 * undici, loaded when the first request is sent rather than when a target is
 * made. Every command builds its targets from interlock.toml, and most
 * (status, list, show, verify, check without a probe) never send a request:
 * loading undici up front cost each of them about a tenth of a second of
 * start-up (bench/cli/start.ts).
 */
import type { Dispatcher } from 'undici'

type Undici = typeof import('undici')

let loading: Promise<Undici> | undefined

export function undici(): Promise<Undici> {
  return (loading ??= import('undici'))
}

export interface AgentSettings {
  connectTimeoutMs: number
  timeoutMs: number
}

/**
 * The dispatcher a transport sends through: the caller's own, or an Agent of
 * the transport's, made on first use and closed by close() (only if made).
 */
export class LazyDispatcher {
  private made?: Promise<Dispatcher>
  private closing?: Promise<void>

  constructor(
    private readonly settings: AgentSettings,
    private readonly own?: Dispatcher,
  ) {}

  get(): Promise<Dispatcher> {
    if (this.own) return Promise.resolve(this.own)
    return (this.made ??= undici().then(
      ({ Agent }) => new Agent({ connect: { timeout: this.settings.connectTimeoutMs }, headersTimeout: this.settings.timeoutMs, bodyTimeout: this.settings.timeoutMs }),
    ))
  }

  /** Closes the Agent this made; a caller's dispatcher is the caller's to close. Idempotent. */
  close(): Promise<void> {
    if (this.own || !this.made) return Promise.resolve()
    return (this.closing ??= this.made.then((d) => d.close()))
  }
}
