/** Seeds 501-1,000 of the notarized schedules (randomized-notary.test.ts), in a file of their own so a second test worker runs them. */
import { describe } from 'vitest'
import { notaryBatchTest } from './notary-batch-test.js'

const HALF = Number(process.env.INTERLOCK_NOTARY_SCHEDULES ?? 1000) / 2

describe('randomized schedules against a notarized tier-3 target', () => {
  notaryBatchTest(Math.ceil(HALF) + 1, Math.floor(HALF))
})
