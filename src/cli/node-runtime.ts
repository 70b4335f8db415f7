/**
 * The Node.js versions Interlock runs on, checked by bin/run.js before it
 * imports anything else: under another Node a native addon built for a
 * supported one (better-sqlite3) dies with NODE_MODULE_VERSION, which the CLI
 * could only call a bug. The versions are package.json's "engines" (one place,
 * the one npm warns from); this reads them rather than repeating them.
 *
 * It must load under any Node, so it imports nothing but node:fs and the
 * error classes (which import nothing), and writes its refusal itself, in the
 * shape error-output.ts gives every other failure.
 */
import { readFileSync } from 'node:fs'
import { UnsupportedNodeError } from '../core/errors.js'

/** One alternative of "engines": this major, from this version on. */
export interface NodeLine {
  major: number
  from: readonly [number, number, number]
}

/** "^22.0.0 || ^24.0.0" → its lines. Only caret ranges: anything else throws, so a new form is noticed in the tests, not guessed at. */
export function parseEngines(range: string): NodeLine[] {
  return range.split('||').map((part) => {
    const m = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(part.trim())
    if (!m) throw new Error(`package.json "engines.node" must be caret ranges joined by || (got ${JSON.stringify(range)})`)
    const from = [Number(m[1]), Number(m[2]), Number(m[3])] as const
    return { major: from[0], from }
  })
}

/** "22 or 24", "22.12.0 or later 22, or 24": the lines as a person reads them. */
export function describeLines(lines: readonly NodeLine[]): string {
  const each = lines.map((l) => (l.from[1] === 0 && l.from[2] === 0 ? `${l.major}` : `${l.from.join('.')} or later ${l.major}`))
  // A comma before the last "or" once the lines read as phrases: "22.12.0 or later 22, or 24".
  const or = each.some((e) => e.includes(' ')) ? ', or ' : ' or '
  return each.length === 1 ? each[0]! : `${each.slice(0, -1).join(', ')}${or}${each.at(-1)}`
}

/** The refusal for this Node version, or undefined when a line admits it. */
export function unsupportedNode(version: string, lines: readonly NodeLine[]): UnsupportedNodeError | undefined {
  const running = version.split('.').map((n) => Number.parseInt(n, 10))
  const admitted = lines.some((l) => running[0] === l.major && !before(running, l.from))
  return admitted ? undefined : new UnsupportedNodeError(describeLines(lines), version)
}

function before(version: readonly number[], from: readonly number[]): boolean {
  const i = from.findIndex((n, k) => version[k] !== n)
  return i !== -1 && version[i]! < from[i]!
}

/** package.json's "engines.node", beside dist/ (and src/) two folders up. */
export function supportedLines(): NodeLine[] {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }
  return parseEngines(pkg.engines.node)
}

/**
 * Under an unsupported Node: prints the refusal (a JSON envelope on stdout
 * under --json, as for any failure; else the message and hint on stderr),
 * sets the exit code (3) and returns true; bin/run.js then runs nothing.
 */
export function refuseUnsupportedNode(argv: readonly string[] = process.argv, version: string = process.versions.node): boolean {
  const refusal = unsupportedNode(version, supportedLines())
  if (!refusal) return false
  if (argv.includes('--json')) {
    const error = { code: refusal.code, exitCode: refusal.exitCode, message: refusal.message, hint: refusal.hint, context: refusal.context }
    process.stdout.write(`${JSON.stringify({ error }, null, 2)}\n`)
  } else {
    process.stderr.write(`Error (${refusal.code}): ${refusal.message}\nTry this: ${refusal.hint}\n`)
  }
  process.exitCode = refusal.exitCode
  return true
}
