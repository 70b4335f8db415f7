/** Takes the reconcile lock of the store in argv[2] (JSON), says so, and waits to be killed. */
import type { StoreConfig } from '../../src/core/config/types.js'
import { tryReconcileLock } from '../../src/core/reconcile/lock.js'

const lock = await tryReconcileLock(JSON.parse(process.argv[2]!) as StoreConfig)
process.stdout.write(lock ? 'locked\n' : 'busy\n')
setInterval(() => {}, 1000)
