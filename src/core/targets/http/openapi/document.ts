/**
 * An OpenAPI 3.x document read from a file (JSON or YAML), as
 * `interlock targets from-openapi` reads it: parsed once per path and
 * version of the file within a process (a published description runs to
 * megabytes: GitHub's is 12 MB), checked to be OpenAPI 3, and never
 * fetched from a URL (the command makes no network request).
 *
 * Only the parts the mapping reads are typed; everything else stays
 * `unknown` and is looked at through `deref` (refs.ts).
 */
import { readFileSync, statSync } from 'node:fs'
import { basename, resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { InputError, NotFoundError, UsageError } from '../../../errors.js'

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
export type JsonTable = { [key: string]: Json }

export interface OpenApiDocument {
  /** The file's absolute path. */
  file: string
  /** Its name, for comments and messages. */
  name: string
  /** The document's `openapi` version, e.g. "3.0.3". */
  version: string
  title: string
  /** info.version: the API's own version. */
  apiVersion: string
  /** The whole document, for `$ref`s. */
  root: JsonTable
}

/** Parsed documents by path, kept while the file's size and mtime stay the same. */
const cache = new Map<string, { mtimeMs: number; size: number; doc: OpenApiDocument }>()

export function loadOpenApi(path: string, cwd = process.cwd()): OpenApiDocument {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(path)) {
    throw new UsageError(`${path} is a URL; targets from-openapi reads a file and makes no network request`, {
      hint: `Download the document first (curl -o api.json '${path}') and give its path.`,
    })
  }
  const file = resolve(cwd, path)
  let stat
  try {
    stat = statSync(file)
  } catch (e) {
    throw fileError(path, file, e)
  }
  const cached = cache.get(file)
  if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached.doc
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (e) {
    throw fileError(path, file, e)
  }
  const doc = parseOpenApi(text, file)
  cache.set(file, { mtimeMs: stat.mtimeMs, size: stat.size, doc })
  return doc
}

/** A document from its text; `file` names it in messages. */
export function parseOpenApi(text: string, file: string): OpenApiDocument {
  const root = parseText(text.replace(/^\uFEFF/, ''), file)
  const name = basename(file)
  if (root === null || typeof root !== 'object' || Array.isArray(root)) {
    throw new InputError(`${file} is not an OpenAPI document: it holds ${root === null ? 'null' : Array.isArray(root) ? 'a list' : `a ${typeof root}`}, not an object`, {
      hint: 'Give the path of an OpenAPI 3 description (JSON or YAML).',
      context: { file },
    })
  }
  if (typeof root.swagger === 'string') {
    throw new InputError(`${file} is Swagger ${root.swagger} (OpenAPI 2), not OpenAPI 3`, {
      hint: 'Convert it to OpenAPI 3 first (e.g. npx swagger2openapi), or find the service\'s OpenAPI 3 description.',
      context: { file },
    })
  }
  const version = root.openapi
  if (typeof version !== 'string' || !/^3\.\d+/.test(version)) {
    throw new InputError(`${file} is not an OpenAPI 3 document: ${version === undefined ? 'it has no "openapi" field' : `"openapi" is ${JSON.stringify(version)}`}`, {
      hint: 'targets from-openapi reads OpenAPI 3.0 and 3.1 descriptions (a top-level "openapi": "3.x.y").',
      context: { file },
    })
  }
  if (root.paths !== undefined && (root.paths === null || typeof root.paths !== 'object' || Array.isArray(root.paths))) {
    throw new InputError(`${file}: "paths" is not an object`, { hint: 'An OpenAPI document lists its operations under paths: { "/path": { post: {...} } }.', context: { file } })
  }
  const info = (root.info !== null && typeof root.info === 'object' && !Array.isArray(root.info) ? root.info : {}) as JsonTable
  return {
    file,
    name,
    version,
    title: typeof info.title === 'string' ? info.title : '',
    apiVersion: typeof info.version === 'string' ? info.version : '',
    root,
  }
}

function parseText(text: string, file: string): Json {
  // JSON first when it looks like JSON: JSON.parse reads 12 MB in a tenth of a second, a YAML parser far slower.
  if (/^\s*[{[]/.test(text)) {
    try {
      return JSON.parse(text) as Json
    } catch (e) {
      if (/\.json$/i.test(file)) throw new InputError(`${file} is not valid JSON: ${(e as Error).message}`, { hint: 'Fix the file, or give the YAML form of the document.', context: { file } })
      // YAML is a superset of JSON in spirit: a flow-style YAML document may start with a brace.
    }
  }
  try {
    return parseYaml(text, { prettyErrors: true }) as Json
  } catch (e) {
    const message = (e as Error).message.split('\n')[0]
    throw new InputError(`${file} is neither valid JSON nor valid YAML: ${message}`, { hint: 'Give the path of an OpenAPI 3 description (JSON or YAML).', context: { file } })
  }
}

function fileError(path: string, file: string, e: unknown): Error {
  const code = (e as NodeJS.ErrnoException).code
  if (code === 'ENOENT' || code === 'ENOTDIR') {
    return new NotFoundError(`${path}: no such file`, { hint: 'Give the path of an OpenAPI 3 description (JSON or YAML).', context: { file } })
  }
  if (code === 'EISDIR') return new InputError(`${path} is a folder, not an OpenAPI document`, { hint: 'Give the path of the document file itself.', context: { file } })
  return new InputError(`cannot read ${path}: ${(e as Error).message}`, { context: { file }, cause: e })
}
