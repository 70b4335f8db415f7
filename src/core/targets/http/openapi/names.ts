/**
 * Names a generated section uses: the target's (from the document's host),
 * an action's (a snake_case form of the operationId), the arguments' (the
 * document's own parameter and property names where interlock.toml allows
 * them) and the environment variables credentials are read from.
 */
import { UsageError } from '../../../errors.js'
import type { OpenApiDocument } from './document.js'

/** interlock.toml's rule for target names (schema.ts). */
export const TARGET_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/
/** What an argument may be called in an action's `args` (schema-http.ts). */
const ARG_NAME = /^[A-Za-z0-9_-]+$/

/** `issues/create` → `issues_create`, `CreateMessage` → `create_message`. */
export function snakeCase(text: string): string {
  const words = text
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
  return words.join('_').toLowerCase()
}

/** An action name from an operationId (or "METHOD /path"), within interlock.toml's rule for them. */
export function actionName(operation: string): string {
  const name = snakeCase(operation).slice(0, 200).replace(/_+$/, '')
  return name === '' ? 'call' : /^[A-Za-z0-9]/.test(name) ? name : `op_${name}`.slice(0, 200)
}

/** The target's name: --name, else the document's host without "api." and its top-level domain (api.github.com → github), else its title's first word. */
export function targetName(doc: OpenApiDocument, given: string | undefined, serverUrl: string | undefined): string {
  if (given !== undefined) {
    if (!TARGET_NAME.test(given)) {
      throw new UsageError(`--name ${JSON.stringify(given)} cannot name a target: target names use letters, digits, "_" and "-" (at most 64 characters), starting with a letter or digit`, {
        hint: 'e.g. --name github',
      })
    }
    return given
  }
  const host = serverUrl ? hostOf(serverUrl) : undefined
  if (host) {
    const labels = host.split('.').filter((l) => !['api', 'www', 'rest'].includes(l))
    const word = labels.length > 1 ? labels[labels.length - 2] : labels[0]
    const name = word ? fit(word) : ''
    if (name) return name
  }
  const fromTitle = fit(doc.title.split(/\s+/).find((w) => /[A-Za-z0-9]/.test(w)) ?? '')
  return fromTitle || 'api'
}

function hostOf(url: string): string | undefined {
  try {
    const host = new URL(url).hostname
    return /^[\d.]+$/.test(host) || host === 'localhost' || host.startsWith('[') ? undefined : host
  } catch {
    return undefined
  }
}

function fit(word: string): string {
  const name = word.toLowerCase().replace(/[^a-z0-9_-]+/g, '').slice(0, 64)
  return /^[a-z0-9]/.test(name) ? name : ''
}

/** A prefix for environment variables: the target's name in capitals (github → GITHUB). */
export function variablePrefix(target: string): string {
  const p = target.toUpperCase().replace(/[^A-Z0-9_]/g, '_')
  return /^[A-Z_]/.test(p) ? p : `_${p}`
}

/** A variable for a header's value: GITHUB + X-Request-Id → GITHUB_X_REQUEST_ID. */
export function headerVariable(prefix: string, header: string): string {
  return `${prefix}_${header.toUpperCase().replace(/[^A-Z0-9]+/g, '_').replace(/^_+|_+$/g, '')}`
}

/**
 * Argument names, one per parameter or property, unique within an action:
 * the document's own name where interlock.toml allows it (so the agent
 * passes what the API's documentation names), else with the other
 * characters made "_"; a second user of a name gets its place as a prefix.
 */
export class ArgNames {
  private readonly used = new Set<string>()
  readonly renamed: string[] = []

  take(name: string, place: string): string {
    const word = place.split(' ')[0]!
    let arg = ARG_NAME.test(name) ? name : name.replace(/[^A-Za-z0-9_-]+/g, '_').replace(/^_+|_+$/g, '') || word
    // A second user of a name takes its place's first word as a prefix: path parameter `name`, then body property `body_name`.
    if (this.used.has(arg)) arg = `${word}_${arg}`
    const base = arg
    for (let i = 2; this.used.has(arg); i++) arg = `${base}_${i}`
    this.used.add(arg)
    if (arg !== name) this.renamed.push(`${place} ${JSON.stringify(name)} is argument ${arg}`)
    return arg
  }

  has(name: string): boolean {
    return this.used.has(name)
  }

  /** Every argument taken, in order. */
  list(): string[] {
    return [...this.used]
  }
}
