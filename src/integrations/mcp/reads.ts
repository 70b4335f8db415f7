/**
 * What each caller's thread read through the proxy, for premises: the digest
 * of the last answer of each read tool call (tool and arguments), so a write
 * that rests on that read is checked against what the agent saw when it
 * decided (targets/mcp/premises.ts). Only reads some tool rests on are kept.
 *
 * Kept in the store (Store.rememberRead), per principal, thread and target,
 * before the read's answer reaches the client: a proxy restarted between the
 * read and the write (a new stdio proxy per session, an HTTP gateway
 * redeployed, another replica) still checks the write against what was
 * read, and one caller's reads are never another's premises. A read the
 * store holds nothing of is read again when the write is proposed.
 */
import { canonicalJson, type JsonObject } from '../../core/canonical-json.js'
import { sha256Hex } from '../../core/hash.js'
import type { Store } from '../../core/stores/store.js'
import { readDigest, type Read } from '../../core/targets/mcp/index.js'

/** Whose thread: the caller (its principal's id) and the thread's name. */
export interface ThreadOf {
  principal: string
  thread: string
}

export class ThreadReads {
  constructor(
    private readonly premiseTools: ReadonlySet<string>,
    private readonly store: Store,
    private readonly target: string,
  ) {}

  /** Whether reads of this tool are worth keeping (some tool rests on it). */
  keeps(tool: string): boolean {
    return this.premiseTools.has(tool)
  }

  async remember(of: ThreadOf, read: Read, result: JsonObject): Promise<void> {
    if (!this.keeps(read.tool)) return
    await this.store.rememberRead({ ...of, target: this.target }, readName(read), readDigest(result))
  }

  /** The digest of what the thread last read with this tool and these arguments, if it did. */
  recall(of: ThreadOf, read: Read): Promise<string | undefined> {
    return this.store.recallRead({ ...of, target: this.target }, readName(read))
  }
}

/** A read's name in the store: its tool and canonical arguments, hashed (arguments may be long). */
function readName(read: Read): string {
  return sha256Hex(`${read.tool}\n${canonicalJson(read.args)}`)
}
