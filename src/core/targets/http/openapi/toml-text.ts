/**
 * The generated section as interlock.toml text: each table serialised by
 * smol-toml (the parser config/load.ts reads it with, so quoting and
 * escapes are right by construction), with the comments a person reads
 * written above it. Comment text comes from the document (summaries,
 * names): it is made one line, without control characters, before it is
 * wrapped, so it cannot end the comment and start a key.
 */
import { stringify } from 'smol-toml'

export interface TomlSection {
  /** The table's key path, e.g. ["targets", "github"]. */
  path: string[]
  /** Paragraphs written above it as `#` comments. */
  comments: string[]
  table: Record<string, unknown>
}

const WIDTH = 100

export function tomlText(sections: readonly TomlSection[]): string {
  return sections
    .map((s) => {
      let nested: Record<string, unknown> = s.table
      for (const key of [...s.path].reverse()) nested = { [key]: nested }
      const comments = s.comments.flatMap((c) => commentLines(c))
      return [...comments, stringify(nested).trimEnd()].join('\n')
    })
    .join('\n\n')
    .concat('\n')
}

/** One paragraph as `#` lines of at most WIDTH characters (a longer word, a URL, keeps its line). */
export function commentLines(paragraph: string): string[] {
  const text = paragraph.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim()
  if (text === '') return ['#']
  const lines: string[] = []
  const prefix = () => (lines.length === 0 ? '# ' : '#   ')
  let current = ''
  for (const word of text.split(' ')) {
    if (current !== '' && prefix().length + current.length + 1 + word.length > WIDTH) {
      lines.push(prefix() + current)
      current = word
    } else current = current === '' ? word : `${current} ${word}`
  }
  lines.push(prefix() + current)
  return lines
}
