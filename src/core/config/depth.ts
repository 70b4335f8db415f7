/**
 * How deep a parsed interlock.toml may nest, and how long its arrays may be,
 * checked before anything else walks it.
 *
 * The deepest real key is four levels down (`policy.rules[0].when[0].arg`);
 * a file nested thousands deep (dotted table headers, which the TOML parser
 * does not limit) would otherwise overflow the stack of whatever walks it
 * recursively next (the schema check, `${VAR}` expansion) and end in an
 * unexpected error instead of a config error.
 *
 * No array of a real config holds more than a few dozen items (rules,
 * conditions, operators, parameter names); a 100,000-item array kept the
 * schema check, `${VAR}` expansion and `config show` busy for seconds to say
 * nothing useful. One problem names it instead.
 *
 * Walked with an explicit stack, each entry linked to its parent, so any
 * depth is measured and a key path is built only for the problem found.
 */
import { tomlKeyPath } from './key-path.js'

export const MAX_CONFIG_DEPTH = 16
export const MAX_ARRAY_ITEMS = 1_000

interface Node {
  value: unknown
  key: string
  parent: Node | undefined
  depth: number
}

/** The problem, naming the key path where the document nests too deep or an array is too long; undefined when neither. */
export function depthProblem(doc: unknown): string | undefined {
  const stack: Node[] = [{ value: doc, key: '', parent: undefined, depth: 0 }]
  while (stack.length > 0) {
    const node = stack.pop()!
    const { value } = node
    if (value === null || typeof value !== 'object' || value instanceof Date) continue
    if (node.depth >= MAX_CONFIG_DEPTH) {
      return `${tomlKeyPath(pathOf(node))}: nested more than ${MAX_CONFIG_DEPTH} levels deep; no key of interlock.toml is deeper than 4`
    }
    if (Array.isArray(value)) {
      if (value.length > MAX_ARRAY_ITEMS) {
        return `${tomlKeyPath(pathOf(node))}: ${value.length} items; no array of interlock.toml may hold more than ${MAX_ARRAY_ITEMS}`
      }
      for (let i = 0; i < value.length; i++) stack.push({ value: value[i], key: String(i), parent: node, depth: node.depth + 1 })
      continue
    }
    for (const key in value) stack.push({ value: (value as Record<string, unknown>)[key], key, parent: node, depth: node.depth + 1 })
  }
  return undefined
}

function pathOf(node: Node): string[] {
  const path: string[] = []
  for (let n: Node | undefined = node; n?.parent; n = n.parent) path.push(n.key)
  return path.reverse()
}
