import { expect } from 'vitest'
import { DispatchFault } from '../../src/core/errors.js'

/** What `p` was rejected with, asserted to be a DispatchFault (a resolved `p` fails the test). */
export async function dispatchFault(p: Promise<unknown>): Promise<DispatchFault> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  )
  expect(e).toBeInstanceOf(DispatchFault)
  return e as DispatchFault
}
