/**
 * What each thread read through the proxy, for premises: the digest of the
 * last answer of each read tool call (tool and arguments), so a write that
 * rests on that read is checked against what the agent saw when it decided
 * (targets/mcp/premises.ts). Only reads some tool rests on are kept, at most
 * MAX_READS per thread (the oldest forgotten first: a forgotten read is read
 * again when the write is proposed). Memory only: a restarted proxy has
 * forgotten, and reads again.
 */
import { canonicalJson, type JsonObject } from '../../core/canonical-json.js'
import { readDigest, type Read } from '../../core/targets/mcp/index.js'

const MAX_READS = 1_000
const MAX_THREADS = 10_000

export class ThreadReads {
  private readonly threads = new Map<string, Map<string, string>>()

  constructor(private readonly premiseTools: ReadonlySet<string>) {}

  /** Whether reads of this tool are worth keeping (some tool rests on it). */
  keeps(tool: string): boolean {
    return this.premiseTools.has(tool)
  }

  remember(thread: string, read: Read, result: JsonObject): void {
    if (!this.keeps(read.tool)) return
    let reads = this.threads.get(thread)
    if (!reads) {
      if (this.threads.size >= MAX_THREADS) this.threads.delete(this.threads.keys().next().value!)
      reads = new Map()
      this.threads.set(thread, reads)
    }
    const k = keyOf(read)
    reads.delete(k)
    reads.set(k, readDigest(result))
    if (reads.size > MAX_READS) reads.delete(reads.keys().next().value!)
  }

  /** The digest of what `thread` last read with this tool and these arguments, if it did. */
  recall(thread: string, read: Read): string | undefined {
    return this.threads.get(thread)?.get(keyOf(read))
  }
}

function keyOf(read: Read): string {
  return `${read.tool}\n${canonicalJson(read.args)}`
}
