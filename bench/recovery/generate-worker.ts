/** A worker thread of build.ts: generates the journals it is asked for (dataset.ts), one at a time. */
import { parentPort, workerData } from 'node:worker_threads'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { generateJournal, RELAY, type Plan } from './dataset.js'

const { plan, seed, base } = workerData as { plan: Plan; seed: number[]; base: number }
const key = generateKeyPair('relay', RELAY, Uint8Array.from(seed))

parentPort!.on('message', (j: number) => {
  parentPort!.postMessage(generateJournal(plan, j, key, base + j))
})
