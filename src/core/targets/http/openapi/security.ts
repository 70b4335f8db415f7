/**
 * An operation's credentials as request headers whose values are `${VAR}`
 * references, never literals: the security requirement the operation (or
 * the document) declares, or the one `--auth` asks for when the document
 * declares none (GitHub's published description is such a one: it says how
 * to authenticate in prose only).
 *
 * The http target keeps header values secret (out of errors, receipts and
 * `interlock check`); a query parameter or cookie it does not. So an API key
 * the document sends in the query or a cookie is left out and said, not put
 * where it would be shown.
 */
import type { JsonTable } from './document.js'
import { headerVariable } from './names.js'
import { derefTable, isTable } from './refs.js'

export type AuthChoice = 'document' | 'bearer' | 'basic' | 'none'
export const AUTH_CHOICES: readonly AuthChoice[] = ['document', 'bearer', 'basic', 'none']

export interface Credentials {
  headers: Record<string, string>
  /** What the comment says about them. */
  about: string[]
  /** What could not be carried. */
  notes: string[]
}

export function credentialsFor(root: JsonTable, operation: JsonTable, prefix: string, auth: AuthChoice): Credentials {
  if (auth === 'bearer') return bearer(prefix, 'from --auth bearer')
  if (auth === 'basic') return basic(prefix, 'from --auth basic')
  if (auth === 'none') return { headers: {}, about: ['Credentials: none (--auth none).'], notes: [] }
  const requirements = Array.isArray(operation.security) ? operation.security : Array.isArray(root.security) ? root.security : undefined
  if (requirements === undefined) {
    return {
      headers: {},
      about: [],
      notes: ['The document declares no security scheme for this operation: no credential header is sent. If the service needs one, rerun with --auth bearer or --auth basic, or add it to headers as a ${VAR} reference.'],
    }
  }
  const options = requirements.filter(isTable)
  if (options.length === 0 || options.some((o) => Object.keys(o).length === 0)) {
    return { headers: {}, about: ['Credentials: none; the document says this operation needs none.'], notes: [] }
  }
  const schemes = isTable(root.components) && isTable(root.components.securitySchemes) ? root.components.securitySchemes : {}
  const tried: string[] = []
  // Each requirement is a set of schemes used together; the first one that can be carried wins.
  for (const option of options) {
    const out: Credentials = { headers: {}, about: [], notes: [] }
    let usable = true
    for (const name of Object.keys(option)) {
      const scheme = derefTable(root, schemes[name])
      const one = scheme ? fromScheme(name, scheme, prefix) : { problem: `security scheme ${name} is not defined in components.securitySchemes` }
      if ('problem' in one) {
        usable = false
        tried.push(one.problem)
        break
      }
      Object.assign(out.headers, one.headers)
      out.about.push(...one.about)
    }
    if (!usable) continue
    if (options.length > 1) out.about.push(`The document offers ${options.length} ways to authenticate; the first that a header can carry is used.`)
    out.notes.push(...tried.map((t) => `Not used: ${t}.`))
    return out
  }
  return {
    headers: {},
    about: [],
    notes: [...tried.map((t) => `Left out: ${t}.`), 'No credential header is sent: add one to headers as a ${VAR} reference, or rerun with --auth bearer or --auth basic.'],
  }
}

type One = { headers: Record<string, string>; about: string[] } | { problem: string }

function fromScheme(name: string, s: JsonTable, prefix: string): One {
  const type = typeof s.type === 'string' ? s.type : ''
  if (type === 'http') {
    const scheme = typeof s.scheme === 'string' ? s.scheme.toLowerCase() : ''
    if (scheme === 'bearer') return bearer(prefix, `security scheme ${name}, HTTP bearer`)
    if (scheme === 'basic') return basic(prefix, `security scheme ${name}, HTTP basic`)
    return { problem: `security scheme ${name} is HTTP ${scheme || '(no scheme)'}, which a fixed header cannot carry` }
  }
  if (type === 'apiKey') {
    const header = typeof s.name === 'string' ? s.name : ''
    if (s.in === 'header' && header !== '') {
      const variable = headerVariable(prefix, header.toLowerCase() === 'authorization' ? 'api_key' : header)
      return { headers: { [header]: `\${${variable}}` }, about: [`Credentials: ${header} from the environment variable ${variable} (security scheme ${name}, an API key in a header).`] }
    }
    return { problem: `security scheme ${name} sends an API key in ${s.in === 'query' ? 'the query' : s.in === 'cookie' ? 'a cookie' : 'an unknown place'}, which the http target does not keep secret` }
  }
  if (type === 'oauth2' || type === 'openIdConnect') {
    const out = bearer(prefix, `security scheme ${name}, ${type}`)
    out.about.push('Interlock neither fetches nor refreshes the access token: the variable must hold a valid one.')
    return out
  }
  if (type === 'mutualTLS') return { problem: `security scheme ${name} is mutual TLS, which the http target does not do` }
  return { problem: `security scheme ${name} has type ${JSON.stringify(type)}, which is not mapped` }
}

function bearer(prefix: string, why: string): Credentials {
  const variable = `${prefix}_TOKEN`
  return { headers: { Authorization: `Bearer \${${variable}}` }, about: [`Credentials: Authorization: Bearer <token> from the environment variable ${variable} (${why}).`], notes: [] }
}

function basic(prefix: string, why: string): Credentials {
  const variable = `${prefix}_BASIC_AUTH`
  return {
    headers: { Authorization: `Basic \${${variable}}` },
    about: [`Credentials: Authorization: Basic from the environment variable ${variable}, the base64 of user:password (${why}).`],
    notes: [],
  }
}
