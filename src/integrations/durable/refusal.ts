import { InputError, isInterlockError } from '../../core/errors.js'

/**
 * An effect refused for what it is (bad arguments, an unknown target, a
 * secret in its args): nothing was journaled or sent, and no retry can make
 * it pass, so an engine must not retry it.
 */
export function isRefusal(e: unknown): boolean {
  return e instanceof InputError || (isInterlockError(e) && (e.exitCode === 2 || e.code === 'E_NOT_FOUND'))
}
