/**
 * A worker for the full-disk test: submits one effect with a large argument
 * through a gate on the SQLite journal named in argv, under whatever file-size
 * limit the parent set, and prints what happened as one JSON line (the
 * outcome, or the error the gate raised) instead of dying on it.
 */
import { Gate } from '../../src/core/gate.js'
import { isInterlockError } from '../../src/core/errors.js'
import { openStore } from '../../src/core/stores/open.js'
import { HttpTarget } from '../../src/core/targets/http/http-target.js'

const [journal, url, size] = process.argv.slice(2) as [string, string, string]
const store = await openStore({ kind: 'sqlite', path: journal })
const gate = new Gate({ store, targets: [new HttpTarget('svc', { tier: 1, url })], retry: { maxAttempts: 2, backoffMs: 1 } })
try {
  const outcome = await gate.submit({ thread: 'disk', target: 'svc', action: 'upload', args: { blob: 'x'.repeat(Number(size)) } })
  process.stdout.write(`${JSON.stringify({ outcome })}\n`)
} catch (e) {
  const error = isInterlockError(e) ? e.toJSON() : { message: String(e) }
  process.stdout.write(`${JSON.stringify({ error })}\n`)
}
await gate.close().catch(() => {})
await store.close().catch(() => {})
