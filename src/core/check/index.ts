export { runChecks, CHECK_MODULES, DEFAULT_PROBE_TIMEOUT_MS, type RunChecksOptions } from './run.js'
export { checkRelayKey } from './keys-check.js'
export { CHECK_FAMILIES, type CheckFamily, type CheckModule, type CheckReport, type CheckRow, type CheckStatus, type CheckSummary, type CheckContext } from './types.js'
export { failedCheckExitCode, isConfigMistake } from './exit-code.js'
