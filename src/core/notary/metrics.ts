/**
 * What a notary counts, as Prometheus text (format 0.0.4), the form the
 * relay's /metrics uses (relay/metrics.ts): every record offered, by kind
 * and the log's answer, so an operator sees aborts, refusals and forgeries
 * as they happen, and failed store calls.
 */
const KINDS = new Set(['intend', 'claim', 'performed', 'failed', 'abort'])

export class NotaryMetrics {
  private readonly records = new Map<string, number>()
  storeErrors = 0
  /** Unix ms of the last record written, 0 before the first. */
  lastWrittenAt = 0

  record(kind: unknown, status: string, now = Date.now()): void {
    const k = `${typeof kind === 'string' && KINDS.has(kind) ? kind : 'unknown'}\u0000${status}`
    this.records.set(k, (this.records.get(k) ?? 0) + 1)
    if (status === 'written') this.lastWrittenAt = now
  }

  exposition(): string {
    const lines: string[] = []
    const metric = (name: string, type: 'counter' | 'gauge', help: string, samples: [string, number][]) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
      for (const [labels, v] of samples) lines.push(`${name}${labels ? `{${labels}}` : ''} ${v}`)
    }
    const records = [...this.records].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]): [string, number] => {
      const [kind, status] = k.split('\u0000')
      return [`kind="${kind}",status="${status}"`, v]
    })
    metric('interlock_notary_records_total', 'counter', 'Records offered to the notary, by kind and answer (written, decided, stale, refused, untrusted, forged, malformed).', records)
    metric('interlock_notary_store_errors_total', 'counter', 'Requests that failed because the log\'s store did not answer.', [['', this.storeErrors]])
    metric('interlock_notary_last_write_timestamp_seconds', 'gauge', 'When the last record was written (Unix seconds).', [['', this.lastWrittenAt / 1000]])
    return `${lines.join('\n')}\n`
  }
}
