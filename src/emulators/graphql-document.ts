/**
 * Just enough of a GraphQL document (spec.graphql.org/October2021, "Language")
 * for an emulator to tell which root field an operation asks for and with
 * which arguments: `mutation M($input: T!) { alias: issueCreate(input: $input) { ... } }`.
 * Argument values are variables, strings, numbers, booleans, null, enums,
 * lists and input objects; variables are resolved from the request's
 * `variables`. Selection sets are skipped: the emulators answer whole
 * objects, whatever was selected.
 */

export type GqlValue = string | number | boolean | null | GqlValue[] | { [k: string]: GqlValue }

export interface RootField {
  /** The field's name (issueCreate, issues). */
  name: string
  /** The key it is answered under: its alias, else its name. */
  key: string
  args: Record<string, GqlValue>
}

export interface Operation {
  kind: 'query' | 'mutation'
  fields: RootField[]
}

const TOKEN = /\s*(?:(#[^\n]*)|("""[\s\S]*?"""|"(?:[^"\\]|\\.)*")|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(\.\.\.|[!$&()[\]{}:=@|,]))/y

/** Throws an Error with a GraphQL-style message when the document cannot be read. */
export function parseOperation(doc: string, variables: Record<string, unknown>): Operation {
  const tokens: string[] = []
  TOKEN.lastIndex = 0
  while (TOKEN.lastIndex < doc.length) {
    const start = TOKEN.lastIndex
    const m = TOKEN.exec(doc)
    if (!m) {
      if (doc.slice(start).trim() === '') break
      throw new Error(`Syntax Error: Unexpected character at ${start}`)
    }
    if (m[1] || m[0].trim() === ',') continue
    tokens.push(m[0].trim())
  }
  let i = 0
  const peek = () => tokens[i]
  const take = (want?: string) => {
    const t = tokens[i++]
    if (t === undefined || (want !== undefined && t !== want)) throw new Error(`Syntax Error: Expected ${want ?? 'more'}, found ${t ?? '<EOF>'}`)
    return t
  }
  let kind: Operation['kind'] = 'query'
  if (peek() === 'query' || peek() === 'mutation') {
    kind = take() as Operation['kind']
    if (peek() !== '(' && peek() !== '{') take()
    if (peek() === '(') skipBalanced('(', ')')
  }
  take('{')
  const fields: RootField[] = []
  while (peek() !== '}') {
    let name = take()
    let key = name
    if (peek() === ':') {
      take(':')
      key = name
      name = take()
    }
    const args: Record<string, GqlValue> = {}
    if (peek() === '(') {
      take('(')
      while (peek() !== ')') {
        const arg = take()
        take(':')
        args[arg] = value()
      }
      take(')')
    }
    if (peek() === '{') skipBalanced('{', '}')
    fields.push({ name, key, args })
  }
  return { kind, fields }

  function skipBalanced(open: string, close: string): void {
    let depth = 0
    do {
      const t = take()
      if (t === open) depth++
      else if (t === close) depth--
    } while (depth > 0)
  }

  function value(): GqlValue {
    const t = take()
    if (t === '$') {
      const v = variables[take()]
      return (v === undefined ? null : v) as GqlValue
    }
    if (t === '[') {
      const list: GqlValue[] = []
      while (peek() !== ']') list.push(value())
      take(']')
      return list
    }
    if (t === '{') {
      const obj: Record<string, GqlValue> = {}
      while (peek() !== '}') {
        const k = take()
        take(':')
        obj[k] = value()
      }
      take('}')
      return obj
    }
    if (t.startsWith('"""')) return t.slice(3, -3)
    if (t.startsWith('"')) return JSON.parse(t) as string
    if (/^-?\d/.test(t)) return Number(t)
    if (t === 'true' || t === 'false') return t === 'true'
    if (t === 'null') return null
    return t
  }
}
