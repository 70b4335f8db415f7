/**
 * `${VAR}` expansion in string values, after validation and before defaults.
 *
 * Values read from the environment are usually credentials, so each one is
 * returned in `secrets` and scrubbed from every output (redact.ts). `$${`
 * writes a literal `${`. A missing or empty variable is a problem naming the
 * key path and the variable: an empty token is never what was meant. So is a
 * `${` without its closing brace: left as it was, a credential such as
 * "Bearer ${TOKEN" would be sent as written.
 */
import { tomlKeyPath } from './key-path.js'

export interface Expanded {
  value: unknown
  secrets: string[]
  /** Every problem, the unset variables' included. */
  problems: string[]
  /** The problems that are a variable not set (or empty), by key path: left as written in `value`. */
  unset: UnsetVariable[]
}

export interface UnsetVariable {
  path: readonly string[]
  name: string
  problem: string
}

// The last branch is a `${` no brace closes: a typo, never a literal (that is `$${`).
const REFERENCE = /\$\$\{|\$\{([^}]*)\}|\$\{[^}]*$/g
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

export function expandEnv(doc: unknown, env: Record<string, string | undefined>): Expanded {
  const secrets = new Set<string>()
  const problems: string[] = []
  const unset: UnsetVariable[] = []

  const expandString = (text: string, path: string[]): string =>
    text.replace(REFERENCE, (match, name: string | undefined) => {
      if (match === '$${') return '${'
      const where = tomlKeyPath(path)
      if (!match.endsWith('}')) {
        problems.push(`${where}: "${match.length > 40 ? `${match.slice(0, 40)}…` : match}" has no closing brace (write \${NAME}, or $\${ for a literal \${)`)
        return match
      }
      if (name === undefined || !NAME.test(name)) {
        problems.push(`${where}: "${match}" is not a valid variable reference (write $\${ for a literal \${)`)
        return match
      }
      const value = env[name]
      if (value === undefined || value === '') {
        const problem = `${where}: environment variable ${name} is not set`
        problems.push(problem)
        unset.push({ path, name, problem })
        return match
      }
      secrets.add(value)
      return value
    })

  const walk = (node: unknown, path: string[]): unknown => {
    if (typeof node === 'string') return expandString(node, path)
    if (Array.isArray(node)) return node.map((item, i) => walk(item, [...path, String(i)]))
    if (isPlainTable(node)) {
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, [...path, k])]))
    }
    return node
  }

  const value = walk(doc, [])
  return { value, secrets: [...secrets], problems, unset }
}

// smol-toml builds tables with a null prototype; dates are TomlDate objects and stay as they are.
function isPlainTable(node: unknown): node is Record<string, unknown> {
  if (node === null || typeof node !== 'object') return false
  const proto = Object.getPrototypeOf(node)
  return proto === null || proto === Object.prototype
}
