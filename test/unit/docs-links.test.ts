/**
 * The docs hold together: every relative link in README.md, docs/*.md and
 * examples/*\/README.md names a file or folder that exists, and every
 * `#anchor` a heading of the file it points into, as GitHub slugs headings
 * (github-slugger: lower case, inline markup dropped, every character but
 * letters, digits, marks, `_`, `-` and spaces removed, spaces turned into
 * `-`; a repeated slug gets `-1`, `-2`, …). And the README stays the front
 * door: at most README_MAX_LINES lines, the rest in the guides it links to.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const repo = resolve(import.meta.dirname, '../..')
const README_MAX_LINES = 400

/** The Markdown files whose links are checked, relative to the repository. */
function markdownFiles(): string[] {
  const docs = readdirSync(join(repo, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)
  const examples = readdirSync(join(repo, 'examples'))
    .map((d) => `examples/${d}/README.md`)
    .filter((f) => existsSync(join(repo, f)))
  return ['README.md', ...docs.sort(), ...examples.sort()]
}

/** The text outside fenced code blocks and inline code spans, line by line (line numbers kept). */
function proseLines(text: string): string[] {
  let fence: string | null = null
  return text.split('\n').map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1]
    if (fence) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = null
      return ''
    }
    if (marker) {
      fence = marker
      return ''
    }
    return line.replace(/(`+)[\s\S]*?\1/g, '')
  })
}

/** GitHub's anchor for a heading's text. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link or image: its text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`/g, '')
    .replace(/(\*\*|__|\*)/g, '')
    .trim()
    .toLowerCase()
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-')
}

/** Every anchor a file's headings make, duplicates numbered as GitHub numbers them. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  let fence: string | null = null
  for (const line of text.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1]
    if (fence) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = null
      continue
    }
    if (marker) {
      fence = marker
      continue
    }
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1]
    if (heading === undefined) continue
    const base = slug(heading)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

interface Link {
  file: string
  line: number
  target: string
}

/** Inline links and images whose target is not a URL (http:, mailto:, …). */
function relativeLinks(file: string, text: string): Link[] {
  const links: Link[] = []
  proseLines(text).forEach((line, i) => {
    for (const m of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1]!
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
      links.push({ file, line: i + 1, target })
    }
  })
  return links
}

/** What is wrong with one link, or null when it resolves. */
function problemOf(link: Link, anchorCache: Map<string, Set<string>>): string | null {
  const [path, anchor] = link.target.split('#', 2) as [string, string | undefined]
  const where = `${link.file}:${link.line}: ${link.target}`
  const abs = path === '' ? join(repo, link.file) : resolve(dirname(join(repo, link.file)), decodeURIComponent(path))
  if (!abs.startsWith(repo)) return `${where}: leaves the repository`
  if (!existsSync(abs)) return `${where}: ${relative(repo, abs)} does not exist`
  if (anchor === undefined) return null
  if (!abs.endsWith('.md') || statSync(abs).isDirectory()) return `${where}: an anchor into a file that is not Markdown`
  let anchors = anchorCache.get(abs)
  if (!anchors) anchorCache.set(abs, (anchors = anchorsOf(readFileSync(abs, 'utf8'))))
  return anchors.has(decodeURIComponent(anchor)) ? null : `${where}: ${relative(repo, abs)} has no heading #${anchor}`
}

/** Links that do not resolve; a link into one of `files` is checked against its text as given. */
function brokenLinks(files: readonly { file: string; text: string }[]): string[] {
  const cache = new Map(files.map(({ file, text }) => [join(repo, file), anchorsOf(text)] as const))
  return files.flatMap(({ file, text }) => relativeLinks(file, text).map((l) => problemOf(l, cache))).filter((p): p is string => p !== null)
}

describe('the docs', () => {
  const files = markdownFiles().map((file) => ({ file, text: readFileSync(join(repo, file), 'utf8') }))

  it('link only to files that exist and headings that are there', () => {
    expect(files.map((f) => f.file)).toEqual(expect.arrayContaining(['README.md', 'docs/cli.md', 'docs/config.md', 'docs/targets.md']))
    // The check is not empty: the README links into the guides, anchors included.
    expect(relativeLinks('README.md', files[0]!.text).filter((l) => l.target.includes('#')).length).toBeGreaterThan(3)
    expect(brokenLinks(files)).toEqual([])
  })

  it(`keep the README to at most ${README_MAX_LINES} lines`, () => {
    const lines = files[0]!.text.replace(/\n$/, '').split('\n').length
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES)
  })

  it('find a broken link, a missing file and a missing anchor (the check can fail)', () => {
    const text = '# Title\n\n## `interlock check`: what it verifies\n\n[ok](#interlock-check-what-it-verifies) [ok](docs/cli.md#exit-codes)\n[bad](#no-such-heading) [bad](docs/nowhere.md) [bad](docs/cli.md#no-such-heading)\n`[not a link](nowhere.md)`\n'
    expect(brokenLinks([{ file: 'README.md', text }])).toEqual([
      'README.md:6: #no-such-heading: README.md has no heading #no-such-heading',
      'README.md:6: docs/nowhere.md: docs/nowhere.md does not exist',
      'README.md:6: docs/cli.md#no-such-heading: docs/cli.md has no heading #no-such-heading',
    ])
  })

  it("slug headings as GitHub does", () => {
    expect(slug('What `outbox verify` catches')).toBe('what-outbox-verify-catches')
    expect(slug('`type = "postgres_row"`')).toBe('type--postgres_row')
    expect(slug("Limits on the store's connections")).toBe('limits-on-the-stores-connections')
    expect(slug('Checkpoints: settled history verified once')).toBe('checkpoints-settled-history-verified-once')
    expect([...anchorsOf('# A\n## A\n```\n# not a heading\n```\n## A\n')]).toEqual(['a', 'a-1', 'a-2'])
  })
})
