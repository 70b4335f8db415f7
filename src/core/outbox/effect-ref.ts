/**
 * An effect id as an operator types it: the whole 64 hex characters, or a
 * unique prefix of at least four (as git takes a commit). Whatever is not hex
 * is a usage error (exit 2), never "no such effect" (7): `outbox show zz`
 * names no effect that could ever exist. An ambiguous prefix is a usage
 * error too, naming the effects it could mean.
 */
import { NotFoundError, UsageError } from '../errors.js'
import type { Store } from '../stores/store.js'

export const MIN_PREFIX = 4
const ID_LENGTH = 64
/** Candidates named in an ambiguity error; one more is read to know there are more. */
const SHOWN = 10

export async function resolveEffectId(store: Pick<Store, 'list'>, typed: string): Promise<string> {
  const text = typed.trim().toLowerCase()
  if (!/^[0-9a-f]+$/.test(text) || text.length > ID_LENGTH) {
    throw new UsageError(`${JSON.stringify(typed)} is not an effect id`, {
      hint: `An effect id is ${ID_LENGTH} hex characters (0-9, a-f), or a unique prefix of at least ${MIN_PREFIX}; \`interlock outbox list\` shows them.`,
      context: { id: typed },
    })
  }
  if (text.length === ID_LENGTH) return text
  if (text.length < MIN_PREFIX) {
    throw new UsageError(`effect id prefix ${JSON.stringify(typed)} is too short`, {
      hint: `Give at least ${MIN_PREFIX} hex characters of the id (\`interlock outbox list\` shows them).`,
      context: { id: typed },
    })
  }
  // The store narrows by range; startsWith guards against a collation that orders hex oddly.
  const found = (await store.list({ idPrefix: text, limit: SHOWN + 1 })).map((s) => s.effect.id).filter((id) => id.startsWith(text))
  if (found.length === 1) return found[0]!
  if (found.length === 0) {
    throw new NotFoundError(`no effect id starts with ${text}`, {
      hint: 'List effects with `interlock outbox list`.',
      context: { id: typed },
    })
  }
  const shown = found.slice(0, SHOWN).sort()
  throw new UsageError(`effect id prefix ${text} is ambiguous: ${found.length > SHOWN ? `more than ${SHOWN}` : found.length} effects start with it`, {
    hint: `Give more characters of the id. Candidates: ${shown.join(', ')}${found.length > SHOWN ? ', ...' : ''}.`,
    context: { id: typed, candidates: shown },
  })
}
