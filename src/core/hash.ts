import { createHash, hash } from 'node:crypto'

// crypto.hash (Node 20.12+) is the one-shot form: about twice as fast as
// createHash().update().digest() for short inputs, which matters when
// recovery verifies a million journal records. Same bytes either way.
const oneShot = typeof hash === 'function'

export function sha256Hex(data: string | Uint8Array): string {
  return oneShot ? hash('sha256', data, 'hex') : createHash('sha256').update(data).digest('hex')
}
