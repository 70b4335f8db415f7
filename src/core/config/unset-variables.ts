/**
 * The one error for `${VAR}` references whose variable is not set, whoever
 * finds them: loading interlock.toml for what makes every target (the
 * library's openInterlock, the relay), or making one target whose reference
 * was left as written for a command that only reads the store
 * (targets/registry.ts). The fix is the environment, not the file, so the
 * hint says what to export rather than "fix the keys".
 */
import { ConfigError } from '../errors.js'

export interface UnsetReference {
  /** The variable's name. */
  name: string
  /** `targets.pay.headers.Authorization: environment variable PAY_TOKEN is not set` */
  problem: string
  /** The target whose key it is; none for another section's ([store] url...). */
  target?: string
  /** The top-level table of the key (`targets`, `store`, `notary`...). */
  section: string
}

export function unsetVariablesError(unset: readonly UnsetReference[], context: Record<string, unknown> = {}): ConfigError {
  const targets = [...new Set(unset.flatMap((u) => (u.target === undefined ? [] : [u.target])))]
  const sections = [...new Set(unset.flatMap((u) => (u.target === undefined ? [`[${u.section}]`] : [])))]
  const owners = [...(targets.length === 1 ? [`target ${targets[0]}`] : targets.length > 1 ? [`targets ${targets.join(', ')}`] : []), ...sections]
  const one = owners.length === 1 && targets.length <= 1
  const variables = [...new Set(unset.map((u) => u.name))]
  // Only a target's credentials: the commands that make no target still run.
  const readers = sections.length === 0 ? ' Commands that only read the store (outbox status, list, show, verify, export; config show) run without them.' : ''
  return new ConfigError(
    `${owners.join(' and ')} ${one ? 'needs' : 'need'} environment variables that are not set`,
    unset.map((u) => u.problem),
    { hint: `Export ${variables.join(', ')} where this runs.${readers}`, context: { ...context, ...(targets.length > 0 ? { targets } : {}), variables } },
  )
}
