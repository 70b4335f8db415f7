/**
 * The load-time check of an http target's request templates: what the
 * schema cannot say, each problem named by its key path, all at once
 * (config/load.ts runs it after the schema; HttpTarget runs it again for
 * settings built in code).
 *
 * - a brace word that is no placeholder (`{charge_id}` for `{args.charge_id}`);
 * - a body that is not valid JSON;
 * - a pointer that does not parse (RFC 6901);
 * - with `args` declared: a template naming another argument, or a declared
 *   argument no template sends (it would be silently left out);
 * - premises naming {effect_id} (they are read before the effect exists);
 * - tier 2 without a query, a query on another tier, a query that names
 *   neither {effect_id} nor an argument;
 * - a status listed as two different outcomes.
 */
import { tomlKeyPath } from '../../config/key-path.js'
import { normalizeTarget } from '../../config/normalize.js'
import type { HttpTargetConfig } from '../../config/types.js'
import type { HttpActionConfig, HttpQueryTemplate, HttpReadTemplate, HttpTemplateKeys, StatusSpec } from '../../config/types-http.js'
import { allSpecs, specsOf, type ActionSpec } from './actions.js'
import { pointerProblem } from './pointer.js'
import { argPathOf, placeholdersOf, strayPlaceholders } from './template.js'

type Path = (string | number)[]
/** The problems found so far, and whether brace words are looked for. */
type Problems = string[] & { skipStrays?: boolean }
const key = (path: Path): string => tomlKeyPath(path.map(String))

/**
 * `strays: false` for settings whose ${VAR}s are filled in already: a secret's
 * value may hold braces (`{y}`) that are no misspelt placeholder, and must not
 * be quoted in a message. The loader checks the file's own text for them.
 */
export function httpTemplateProblems(name: string, c: HttpTargetConfig, options: { strays?: boolean } = {}): string[] {
  const problems: Problems = Object.assign([], { skipStrays: options.strays === false })
  const base: Path = ['targets', name]
  levelProblems(problems, base, c)
  for (const [action, own] of Object.entries(c.actions ?? {})) levelProblems(problems, [...base, 'actions', action], own)
  if (c.premiseUrl && (c.restsOn || Object.values(c.actions ?? {}).some((a) => a.restsOn))) {
    problems.push(`${key([...base, 'premise_url'])}: give premise_url or rests_on, not both`)
  }
  if (c.notary) {
    for (const [action, own] of Object.entries(c.actions ?? {})) {
      if (own.tier !== undefined) problems.push(`${key([...base, 'actions', action, 'tier'])}: not with notary: the notary answers for the whole target, which is tier 3`)
    }
  }
  for (const spec of allSpecs(specsOf(name, c))) specProblems(problems, spec, spec.action === null ? c : c.actions![spec.action]!)
  return problems
}

/**
 * A loaded http target's template problems: the file's own text (its
 * `${VAR}`s not yet filled in) is looked at for misspelt placeholders, so
 * a secret's braces are never taken for one nor quoted; the rest is checked
 * on the settings as they will be used.
 */
export function loadedHttpTemplateProblems(name: string, resolved: HttpTargetConfig, asWritten: Record<string, unknown>, dir: string): string[] {
  let written: HttpTargetConfig | undefined
  try {
    const t = normalizeTarget(asWritten, dir)
    if (t.type === 'http') written = t
  } catch {
    // What cannot be read as written is read as resolved, braces aside.
  }
  return written ? httpTemplateProblems(name, written) : httpTemplateProblems(name, resolved, { strays: false })
}

/** What one table (the target's or an action's) declares, checked where it is written. */
function levelProblems(out: Problems, at: Path, t: HttpTemplateKeys & { url?: string; args?: string[] }): void {
  strays(out, [...at, 'url'], t.url)
  strays(out, [...at, 'params'], t.params)
  bodyProblems(out, at, t)
  for (const k of ['receipt', 'error'] as const) pointer(out, [...at, k], t[k])
  statusOverlaps(out, at, t)
  if (t.query) queryProblems(out, [...at, 'query'], t.query)
  t.restsOn?.forEach((r, i) => readProblems(out, [...at, 'rests_on', i], r))
}

function bodyProblems(out: Problems, at: Path, t: Pick<HttpTemplateKeys, 'body'>): void {
  const b = t.body
  if (!b) return
  if (b.kind === 'json') {
    if (b.text !== undefined) {
      try {
        JSON.parse(b.text)
      } catch (e) {
        out.push(`${key([...at, 'body'])}: not valid JSON (${(e as Error).message}); write placeholders inside strings, e.g. "amount": "{args.amount}" (a string that is only a placeholder keeps the argument's type)`)
        return
      }
    }
    strays(out, [...at, 'body'], b.template)
  } else if (b.kind === 'form') strays(out, [...at, 'form'], b.fields)
  else strays(out, [...at, 'graphql', 'variables'], b.variables)
}

function queryProblems(out: Problems, at: Path, q: HttpQueryTemplate): void {
  strays(out, [...at, 'url'], q.url)
  strays(out, [...at, 'params'], q.params)
  strays(out, [...at, 'found_equals'], q.foundEquals)
  bodyProblems(out, at, q)
  for (const [k, v] of [['found', q.found], ['receipt', q.receipt]] as const) pointer(out, [...at, k], v)
  if (q.found === undefined && q.foundEquals !== undefined) out.push(`${key([...at, 'found_equals'])}: needs found, the pointer whose value it is compared with`)
  if (q.found !== undefined && q.foundStatus !== undefined) out.push(`${key([...at, 'found_status'])}: give found or found_status, not both`)
  statusOverlaps(out, at, { committed: q.foundStatus, unknown: q.notFoundStatus }, { committed: 'found_status', unknown: 'not_found_status' })
}

function readProblems(out: Problems, at: Path, r: HttpReadTemplate): void {
  strays(out, [...at, 'url'], r.url)
  strays(out, [...at, 'params'], r.params)
  for (const [k, v] of [['url', r.url], ['params', r.params]] as const) {
    if (placeholdersOf(v).includes('effect_id')) out.push(`${key([...at, k])}: cannot use {effect_id}: premises are read before the effect exists`)
  }
  r.pointers?.forEach((p, i) => pointer(out, [...at, 'pointers', i], p))
}

/** Checks on what an action ends up with, its own keys over the target's. */
function specProblems(out: Problems, spec: ActionSpec, own: HttpTargetConfig | HttpActionConfig): void {
  const at = spec.keyPath
  if (spec.tier === 2 && !spec.query) {
    out.push(`${at}.query: required when tier = 2 (the gate asks it whether an effect already happened); or declare tier 1 or 3`)
  }
  if (spec.tier !== 2 && own.query && spec.action !== null) out.push(`${at}.query: only used when tier = 2; remove it, or set tier = 2 if the service can be asked`)
  if (spec.tier === 2 && spec.query) {
    const named = placeholdersOf([spec.query.url, spec.query.params ?? {}, bodyStrings(spec.query.body), spec.query.foundEquals ?? ''])
    if (!named.some((p) => p === 'effect_id' || p.startsWith('args.'))) {
      out.push(`${at}.query: names neither {effect_id} nor an argument: it could not tell this effect from any other (carry {effect_id} in the request, e.g. a label or a marker, and look for it)`)
    }
  }
  if (!spec.args) return
  const declared = new Set(spec.args)
  const used = new Set<string>()
  for (const [where, template] of templatesOf(spec)) {
    for (const p of placeholdersOf(template)) {
      const path = argPathOf(p)
      if (!path) continue
      used.add(path[0]!)
      if (!declared.has(path[0]!)) out.push(`${at}.args: {${p}} (in ${where}) names an argument the action does not declare; add "${path[0]}" to args or fix the template`)
    }
  }
  // The envelope sends every argument; a template sends only what it names.
  if (spec.request.body) {
    for (const a of spec.args) if (!used.has(a)) out.push(`${at}.args: "${a}" is declared but no template sends it: the service would never see it`)
  }
}

/** Every template an action's calls fill in, with where it is written. */
export function templatesOf(spec: ActionSpec): [string, unknown][] {
  const out: [string, unknown][] = [['url', spec.request.url], ['params', spec.request.params ?? {}], ['body', bodyStrings(spec.request.body)]]
  if (spec.query) out.push(['query', [spec.query.url, spec.query.params ?? {}, bodyStrings(spec.query.body), spec.query.foundEquals ?? '']])
  spec.restsOn?.forEach((r, i) => out.push([`rests_on.${i}`, [r.url, r.params ?? {}]]))
  return out
}

function bodyStrings(b: ActionSpec['request']['body']): unknown {
  if (!b) return null
  return b.kind === 'json' ? b.template : b.kind === 'form' ? b.fields : b.variables
}

function strays(out: Problems, at: Path, template: unknown): void {
  if (out.skipStrays) return
  for (const s of new Set(strayPlaceholders(template))) {
    const hint = s.startsWith('args') ? `{args.NAME}` : /^[a-z_][a-z0-9_]*$/i.test(s) ? `{args.${s}}` : '{args.NAME}'
    out.push(`${key(at)}: {${s}} is not a placeholder; write ${hint}, {effect_id} or {action}`)
  }
}

function pointer(out: string[], at: Path, p: string | undefined): void {
  const problem = p === undefined ? undefined : pointerProblem(p)
  if (problem) out.push(`${key(at)}: ${problem}`)
}

const OUTCOMES = { committed: 'committed', failed: 'failed', retryLater: 'retry_later', unknown: 'unknown' } as const

/** A status (or class) in two lists means two outcomes at once. */
function statusOverlaps(
  out: string[],
  at: Path,
  t: Partial<Record<keyof typeof OUTCOMES, StatusSpec[] | undefined>>,
  names: Partial<Record<keyof typeof OUTCOMES, string>> = OUTCOMES,
): void {
  const seen = new Map<string, string>()
  for (const k of Object.keys(OUTCOMES) as (keyof typeof OUTCOMES)[]) {
    for (const s of t[k] ?? []) {
      const id = String(s)
      const first = seen.get(id)
      if (first && first !== names[k]) out.push(`${key([...at, names[k]!])}: ${JSON.stringify(s)} is also in ${first}; a status means one outcome`)
      else seen.set(id, names[k]!)
    }
  }
}

/**
 * A lagging query is waited for within one pass of the gate (query.ts), so
 * its settle time must fit in [gate] max_wait_ms: a longer one would leave
 * every pass in flight, never believing "not found".
 */
export function settleProblems(name: string, c: HttpTargetConfig, maxWaitMs: number): string[] {
  return allSpecs(specsOf(name, c))
    .filter((s) => (s.query?.settleMs ?? 0) > maxWaitMs)
    .map((s) => `${s.keyPath}.query.settle_ms: ${s.query!.settleMs} is longer than [gate] max_wait_ms (${maxWaitMs}), which one pass waits in place; raise max_wait_ms to at least it`)
}
