/**
 * Text a target must put on the wire as UTF-8 bytes (an S3 object body, a
 * file in a repository, a PostgreSQL text parameter). A JavaScript string
 * that is not well-formed Unicode (a lone surrogate) has no UTF-8 bytes:
 * encoding it would silently send U+FFFD instead of what the agent wrote.
 * Such text is refused at the edge, before anything is journaled. JSON
 * bodies need no such check: canonical JSON escapes a lone surrogate, and
 * the journal (either store) keeps it as written.
 */
import { InputError } from '../errors.js'

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Refuses `value` when it has a lone surrogate; `what` names the argument ("put: body"). */
export function assertUtf8Text(value: string, what: string, hint?: string): void {
  const m = LONE_SURROGATE.exec(value)
  if (!m) return
  const unit = m[0].charCodeAt(0).toString(16).toUpperCase()
  throw new InputError(`${what} is not well-formed Unicode: a lone surrogate (\\u${unit}) at index ${m.index} has no UTF-8 bytes, so it cannot be sent as written`, {
    hint: hint ?? 'Pass the text as the agent meant it; a lone surrogate is usually text cut in the middle of an emoji or other astral character.',
    context: { index: m.index },
  })
}
