/**
 * Repository premises at two precisions, read from the working tree.
 *
 * The premises JSON (what `capture` returns and the journal keeps):
 *
 *   {
 *     "files":   { "src/a.ts": "<git blob sha1 of the content>", "src/new.ts": null },
 *     "symbols": { "src/a.ts": { "refund": "<sha256>", "Billing.charge": "<sha256>" } }
 *   }
 *
 * - files: the git blob hash (`git hash-object`: sha1 of "blob <size>\0" and the
 *   bytes), or null when the decision rests on the file not existing. Any edit
 *   of the file violates it.
 * - symbols: per file, per dotted symbol path (symbols.ts), sha256 of the
 *   declaration's text. Only an edit inside the symbol violates it; a symbol
 *   that can no longer be found is a violation naming it.
 *
 * Both members are optional; other top-level members are left to whoever put
 * them there. A premise is written as a spec, `{ file, symbol? }`, or as the
 * short string "src/a.ts" / "src/a.ts#Billing.charge".
 *
 * Hashes are of the bytes on disk, so a clean/smudge filter (autocrlf, LFS)
 * can make a file hash differ from the blob git stores; file premises compare
 * disk with disk, so that never shows as a violation.
 */
import { createHash } from 'node:crypto'
import { readFile, realpath } from 'node:fs/promises'
import type { JsonObject } from '../../canonical-json.js'
import type { Premises } from '../../effect.js'
import { InputError, isInterlockError } from '../../errors.js'
import { normaliseRepoPath, resolveRepoPath } from './paths.js'
import { supportsSymbols, symbolHash, SYMBOL_EXTENSIONS } from './symbols.js'

export type PremiseSpec = string | { file: string; symbol?: string }

export interface RepoPremises {
  files?: Record<string, string | null>
  symbols?: Record<string, Record<string, string>>
}

/** The git blob id of `content`, as `git hash-object` computes it. */
export function gitBlobHash(content: Uint8Array): string {
  return createHash('sha1').update(`blob ${content.byteLength}\0`).update(content).digest('hex')
}

const SHORT_SPEC = new RegExp(`^(.+?(?:${SYMBOL_EXTENSIONS.map((e) => e.replace('.', '\\.')).join('|')}))#(.+)$`, 'i')
const SYMBOL_PATH = /^[^.\s]+(\.[^.\s]+)*$/

/** Validates and normalises one spec; throws InputError naming what is wrong. */
export function parsePremiseSpec(spec: unknown): { file: string; symbol?: string } {
  let file: unknown
  let symbol: unknown
  if (typeof spec === 'string') {
    const m = SHORT_SPEC.exec(spec)
    ;[file, symbol] = m ? [m[1], m[2]] : [spec, undefined]
  } else if (spec !== null && typeof spec === 'object' && !Array.isArray(spec)) {
    ;({ file, symbol } = spec as { file?: unknown; symbol?: unknown })
  } else {
    throw new InputError(`a premise must be "path", "path#Symbol" or { file, symbol? } (got ${JSON.stringify(spec)})`)
  }
  const rel = normaliseRepoPath(file)
  if (symbol === undefined) return { file: rel }
  if (typeof symbol !== 'string' || !SYMBOL_PATH.test(symbol)) {
    throw new InputError(`premise on ${rel}: symbol must be a dotted name such as "refund" or "Billing.charge" (got ${JSON.stringify(symbol)})`)
  }
  if (!supportsSymbols(rel)) {
    throw new InputError(`premise on ${rel}#${symbol}: symbols can be read only in ${SYMBOL_EXTENSIONS.join(' ')} files`, {
      hint: 'Premise the whole file instead: { file } without symbol.',
    })
  }
  return { file: rel, symbol }
}

type Read = { kind: 'file'; content: Buffer } | { kind: 'missing' } | { kind: 'not-a-file' }

async function readWorkingFile(root: string, rel: string): Promise<Read> {
  const { abs } = await resolveRepoPath(root, rel)
  try {
    return { kind: 'file', content: await readFile(abs) }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'missing' }
    if (code === 'EISDIR') return { kind: 'not-a-file' }
    throw e
  }
}

// Validation right before apply re-reads what validatePremises just parsed:
// keyed by content, the second look costs a hash, not a parse.
const symbolCache = new Map<string, string | null>()
async function cachedSymbolHash(rel: string, content: Buffer, symbol: string): Promise<string | null> {
  const ext = rel.slice(rel.lastIndexOf('.')).toLowerCase()
  const key = `${gitBlobHash(content)}\0${ext}\0${symbol}`
  if (symbolCache.has(key)) return symbolCache.get(key)!
  const hash = await symbolHash(rel, content.toString('utf8'), symbol)
  if (symbolCache.size >= 1000) symbolCache.delete(symbolCache.keys().next().value!)
  symbolCache.set(key, hash)
  return hash
}

/** Reads what each spec names from the working tree at `repoPath`, now. */
export async function captureRepoPremises(repoPath: string, specs: readonly PremiseSpec[]): Promise<Premises> {
  const root = await realpath(repoPath)
  const files: Record<string, string | null> = {}
  const symbols: Record<string, Record<string, string>> = {}
  for (const raw of specs) {
    const spec = parsePremiseSpec(raw)
    const read = await readWorkingFile(root, spec.file)
    if (read.kind === 'not-a-file') throw new InputError(`premise on ${spec.file}: it is a directory, not a file`)
    if (spec.symbol === undefined) {
      files[spec.file] = read.kind === 'file' ? gitBlobHash(read.content) : null
      continue
    }
    const where = `${spec.file}#${spec.symbol}`
    if (read.kind === 'missing') throw new InputError(`premise on ${where}: ${spec.file} does not exist`)
    const hash = await cachedSymbolHash(spec.file, read.content, spec.symbol)
    if (hash === null) throw new InputError(`premise on ${where}: no function, class, method or variable ${spec.symbol} in ${spec.file}`)
    ;(symbols[spec.file] ??= {})[spec.symbol] = hash
  }
  const premises: RepoPremises = {}
  if (Object.keys(files).length > 0) premises.files = files
  if (Object.keys(symbols).length > 0) premises.symbols = symbols
  return premises as JsonObject
}

/** Violations of `premises` against the working tree at `repoPath`; [] when all hold. */
export async function validateRepoPremises(repoPath: string, premises: Premises): Promise<string[]> {
  const root = await realpath(repoPath)
  const violations: string[] = []
  const { files, symbols, problems } = shapeOf(premises)
  violations.push(...problems)
  for (const [file, was] of Object.entries(files).sort(byKey)) {
    const read = await guarded(file, violations, () => readWorkingFile(root, file))
    if (!read) continue
    if (read.kind === 'not-a-file') violations.push(`${file} is no longer a file`)
    else if (read.kind === 'missing') {
      if (was !== null) violations.push(`${file} was deleted`)
    } else {
      const now = gitBlobHash(read.content)
      if (was === null) violations.push(`${file} was created since the decision (now ${short(now)})`)
      else if (now !== was) violations.push(`${file} changed since the decision (was ${short(was)}, now ${short(now)})`)
    }
  }
  for (const [file, perSymbol] of Object.entries(symbols).sort(byKey)) {
    const read = await guarded(file, violations, () => readWorkingFile(root, file))
    if (!read) continue
    for (const [symbol, was] of Object.entries(perSymbol).sort(byKey)) {
      const where = `${file}#${symbol}`
      if (read.kind !== 'file') {
        violations.push(`${where} no longer exists (${file} was ${read.kind === 'missing' ? 'deleted' : 'replaced by a directory'})`)
        continue
      }
      const now = await cachedSymbolHash(file, read.content, symbol)
      if (now === null) violations.push(`${where} no longer exists (renamed or removed since the decision)`)
      else if (now !== was) violations.push(`${where} changed since the decision (was ${short(was)}, now ${short(now)})`)
    }
  }
  return violations
}

/** Premises from elsewhere (hand-written, an older version) are checked, not trusted: a malformed one is a violation. */
function shapeOf(premises: Premises): { files: Record<string, string | null>; symbols: Record<string, Record<string, string>>; problems: string[] } {
  const problems: string[] = []
  const files: Record<string, string | null> = {}
  const symbols: Record<string, Record<string, string>> = {}
  const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
  if (premises.files !== undefined) {
    if (!isObj(premises.files)) problems.push('premises.files must map paths to blob hashes')
    else
      for (const [f, h] of Object.entries(premises.files)) {
        if (h === null || typeof h === 'string') files[f] = h
        else problems.push(`premises.files[${JSON.stringify(f)}] must be a blob hash or null`)
      }
  }
  if (premises.symbols !== undefined) {
    if (!isObj(premises.symbols)) problems.push('premises.symbols must map paths to { symbol: hash }')
    else
      for (const [f, per] of Object.entries(premises.symbols)) {
        if (!isObj(per)) {
          problems.push(`premises.symbols[${JSON.stringify(f)}] must map symbol names to hashes`)
          continue
        }
        for (const [s, h] of Object.entries(per)) {
          if (typeof h === 'string') (symbols[f] ??= {})[s] = h
          else problems.push(`premises.symbols[${JSON.stringify(f)}][${JSON.stringify(s)}] must be a hash`)
        }
      }
  }
  return { files, symbols, problems }
}

/** A path the premises name but that is not a valid repository path becomes a violation, not a crash. */
async function guarded<T>(file: string, violations: string[], read: () => Promise<T>): Promise<T | null> {
  try {
    return await read()
  } catch (e) {
    if (isInterlockError(e)) {
      violations.push(`premise on ${JSON.stringify(file)} cannot be checked: ${e.message}`)
      return null
    }
    throw e
  }
}

function byKey([a]: [string, unknown], [b]: [string, unknown]): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function short(hash: string): string {
  return hash.length > 12 ? `${hash.slice(0, 12)}…` : hash
}
