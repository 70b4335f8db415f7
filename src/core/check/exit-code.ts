/**
 * The exit code of a failed `interlock check`: 3 (config) when any failure is
 * a mistake in interlock.toml itself, so CI can tell "fix the file" from
 * "staging is down" (1). A mistake in the file: it is missing or does not
 * match the schema, a `${VAR}` it needs is unset, it declares an MCP tool the
 * server does not have, its policy names a target or action that does not
 * exist or a quorum larger than its operators, or an operator key in it does
 *  not parse, or a target module that cannot be loaded or made.
 */
import { ExitCode } from '../errors.js'
import type { CheckReport, CheckRow } from './types.js'

const MISTAKES_IN_THE_FILE = [/^config\./, /^targets\.[^.]+\.tools\./, /^targets\.[^.]+\.module$/, /^targets\.[^.]+\.(actions\.[^.]+\.)?request$/, /^policy\./, /^notify\./, /^keys\.operators$/]

export function isConfigMistake(row: CheckRow): boolean {
  return row.status === 'fail' && MISTAKES_IN_THE_FILE.some((re) => re.test(row.id))
}

export function failedCheckExitCode(report: CheckReport): ExitCode {
  return report.checks.some(isConfigMistake) ? ExitCode.CONFIG : ExitCode.FAILURE
}
