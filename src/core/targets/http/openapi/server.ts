/**
 * The base URL an operation's requests go to: `--server` when given (a
 * staging host, an emulator, a `${VAR}`), else the first of the servers the
 * operation, its path or the document lists, its variables set to their
 * defaults. A relative server ("/api/v3") has no host to send to: the user
 * must say which.
 */
import { InputError, UsageError } from '../../../errors.js'
import type { OpenApiDocument } from './document.js'
import type { Operation } from './operations.js'
import { isTable } from './refs.js'

export interface Server {
  base: string
  about: string[]
}

export function serverFor(doc: OpenApiDocument, op: Operation, given: string | undefined, opName: string): Server {
  if (given !== undefined) {
    if (!/^(https?:\/\/[^/\s]+|\$\{[A-Za-z_][A-Za-z0-9_]*\})/.test(given)) {
      throw new UsageError(`--server ${JSON.stringify(given)} is not an http:// or https:// URL or a \${VAR} reference`, { hint: 'e.g. --server https://api.example.com or --server \'${API_URL}\'' })
    }
    return { base: given.replace(/\/+$/, ''), about: [`Server: ${given} (--server).`] }
  }
  const servers = [op.operation.servers, op.pathItem.servers, doc.root.servers].find((s) => Array.isArray(s) && s.length > 0) as unknown[] | undefined
  const first = servers?.[0]
  if (!isTable(first) || typeof first.url !== 'string') {
    throw new InputError(`${doc.name} names no server for ${opName}, so the URL to send it to is unknown`, {
      hint: 'Give the service\'s base URL: --server https://api.example.com',
      context: { file: doc.file, operation: opName },
    })
  }
  const about: string[] = []
  const variables = isTable(first.variables) ? first.variables : {}
  let url = first.url.replace(/\{([^{}]+)\}/g, (whole, name: string) => {
    const v = variables[name]
    const value = isTable(v) && (typeof v.default === 'string' || typeof v.default === 'number') ? String(v.default) : undefined
    if (value === undefined) return whole
    about.push(`Server variable {${name}} is its default, ${value}.`)
    return value
  })
  if (/\{[^{}]*\}/.test(url)) {
    throw new InputError(`the server URL ${first.url} of ${doc.name} has a variable with no default`, { hint: 'Give the base URL yourself: --server https://…', context: { file: doc.file } })
  }
  if (!/^https?:\/\//i.test(url)) {
    throw new InputError(`the server URL ${JSON.stringify(first.url)} of ${doc.name} is not an absolute http(s) URL`, {
      hint: 'Give the service\'s base URL: --server https://api.example.com',
      context: { file: doc.file },
    })
  }
  url = url.replace(/\/+$/, '').replace(/\$\{/g, () => '$${')
  if (servers!.length > 1) about.push(`Server: ${url}, the first of ${servers!.length} the document lists (--server picks another).`)
  return { base: url, about }
}
