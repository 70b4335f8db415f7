/**
 * Which targets take `notary = "<url>"` (docs/notary.md, "Which targets take
 * a notary"), and how a file that puts it elsewhere is told.
 *
 * The notary needs the service itself to write `claim` and `performed` for
 * the effect id and attempt Interlock sends. Only the http target sends them
 * (the Interlock-Effect and Interlock-Attempt headers, targets/target.ts
 * ApplyContext.headers), to a service whose owner can add the middleware or
 * the in-transaction form; and only at tier 3 does a notary change anything.
 * Every other type is refused at load: its service is someone else's API
 * that never writes to a notary (Stripe, GitHub, S3, SendGrid, Slack, an MCP
 * server reached over its own protocol), or Interlock itself performs the
 * effect and finds it again by its id (postgres_row, repo: already tier 2).
 */

/** The phrase every refusal carries, so the loader and `check` give it the hint below. */
const MARK = 'only an http target with tier = 3 takes notary'

const NOTARY_TARGETS_WHY =
  '`notary` is taken only by an http target with tier = 3: Interlock sends it the Interlock-Effect and Interlock-Attempt headers, and the service (its owner adds the notary middleware, or the in-transaction form on PostgreSQL) records claim and performed at the notary itself. ' +
  'stripe (tier 1: deduplicated by the idempotency key), github, s3 (tier 2: asked directly), postgres_row and repo (tier 2: Interlock writes the effect itself and finds it by its id) need none; ' +
  'sendgrid, slack and mcp reach services that never write to a notary, so one could never answer. A tier-3 service of your own: reach it through an http target.'

/** The problem for `key` (notary or notary_services) on a target of `type` that cannot take it. */
export function notaryRefusal(type: unknown): string {
  const what = typeof type === 'string' ? `a ${type} target` : 'this target'
  return `not taken by ${what}: ${MARK} (its service records performed at the notary itself)`
}

export function isNotaryRefusal(problem: string): boolean {
  return problem.includes(MARK)
}

/** The hint for `problems` (some of them refusals): which tables to take the key out of, and why only http tier 3 takes it. */
export function notaryTargetsHint(problems: readonly string[]): string {
  const tables = [...new Set(problems.filter(isNotaryRefusal).map((p) => /^(targets\.[^:]+)\.notary(?:_services)?:/.exec(p)?.[1]).filter(Boolean))]
  const where = tables.length > 0 ? tables.map((t) => `[${t}]`).join(', ') : 'that target'
  return `Remove notary (and notary_services) from ${where}. ${NOTARY_TARGETS_WHY}`
}

/** True for a `notary`/`notary_services` key directly under [targets.<name>]. */
export function isNotaryKey(path: readonly string[], key: string): boolean {
  return path.length === 2 && path[0] === 'targets' && (key === 'notary' || key === 'notary_services')
}
