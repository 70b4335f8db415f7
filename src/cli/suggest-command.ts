/**
 * "Did you mean …?" for a mistyped command: which commands or topics come
 * closest to what was typed. Pure, so the matching is tested without the CLI.
 *
 * oclif joins every leading word that is not a flag into the id it looks up
 * (`interlock outbx show 3f9a` asks for `outbx:show:3f9a`), so a command that
 * takes arguments is compared with as many words as its own id has, and the
 * rest are its arguments, kept in the suggestion. A command word typed alone
 * (`interlock status`) finds the commands it ends (`outbox status`).
 */
import { editDistance as distance } from '../core/edit-distance.js'

export { distance }

export interface CommandCandidate {
  /** oclif id, words joined by ':' (`outbox:status`), or a topic's name. */
  id: string
  /** A command that takes positional arguments (words after its id are not part of it). */
  takesArgs: boolean
}

export interface Suggestion {
  /** The id suggested, then the typed words that are its arguments. */
  words: string[]
}

/** At most this many suggestions, when several come equally close. */
const MAX_SUGGESTIONS = 3

export function suggestCommands(typed: string, candidates: readonly CommandCandidate[]): Suggestion[] {
  const words = typed.split(':').filter(Boolean)
  if (words.length === 0) return []
  let best = Number.POSITIVE_INFINITY
  let found: Suggestion[] = []
  for (const candidate of candidates) {
    const match = closestSplit(words, candidate)
    if (!match || match.score > tolerance(candidate.id)) continue
    const suggestion = { words: [...candidate.id.split(':'), ...match.args] }
    if (match.score < best) {
      best = match.score
      found = [suggestion]
    } else if (match.score === best) {
      found.push(suggestion)
    }
  }
  return found.slice(0, MAX_SUGGESTIONS)
}

/**
 * How close the typed words come to a candidate: the first k words against its
 * id, the rest its arguments. Only a command that takes arguments may leave
 * words over; longer heads are tried first, so they win a tie.
 */
function closestSplit(words: readonly string[], candidate: CommandCandidate): { score: number; args: string[] } | undefined {
  const own = candidate.id.split(':').length
  const splits = candidate.takesArgs ? Math.min(words.length, own) : words.length
  let best: { score: number; args: string[] } | undefined
  for (let k = splits; k >= (candidate.takesArgs ? 1 : words.length); k--) {
    const head = words.slice(0, k).join(':')
    let score = distance(head, candidate.id)
    // A command's last words typed alone (`status` for `outbox status`) count as one typo.
    if (candidate.id.endsWith(`:${head}`)) score = Math.min(score, 1)
    if (!best || score < best.score) best = { score, args: words.slice(k) }
  }
  return best
}

/** Typos allowed for a candidate: about one in three characters, at least one. */
function tolerance(id: string): number {
  return Math.max(1, Math.floor(id.length / 3))
}
