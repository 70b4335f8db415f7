/**
 * How deep a parsed interlock.toml may nest. The deepest real key is four
 * levels down (`policy.rules[0].when[0].arg`); a file nested thousands deep
 * (dotted table headers, which the TOML parser does not limit) would
 * otherwise overflow the stack of whatever walks it recursively next (the
 * schema check, `${VAR}` expansion) and end in an unexpected error instead
 * of a config error. Walked with an explicit stack, so any depth is measured.
 */
import { tomlKeyPath } from './key-path.js'

export const MAX_CONFIG_DEPTH = 16

/** The problem, naming the key path where the nesting goes too deep; undefined when it does not. */
export function depthProblem(doc: unknown): string | undefined {
  const stack: { node: unknown; path: string[] }[] = [{ node: doc, path: [] }]
  while (stack.length > 0) {
    const { node, path } = stack.pop()!
    if (node === null || typeof node !== 'object') continue
    if (path.length >= MAX_CONFIG_DEPTH) {
      return `${tomlKeyPath(path)}: nested more than ${MAX_CONFIG_DEPTH} levels deep; no key of interlock.toml is deeper than 4`
    }
    const entries: [string, unknown][] = Array.isArray(node) ? node.map((v, i) => [String(i), v]) : Object.entries(node)
    for (const [key, value] of entries) stack.push({ node: value, path: [...path, key] })
  }
  return undefined
}
