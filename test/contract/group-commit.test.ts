/** The store contract holds through the group-commit decorator (SQLite beneath). */
import { withGroupCommit } from '../../src/core/stores/group-commit.js'
import { sqliteHarness } from './sqlite-harness.js'
import { leaseContract } from './lease.contract.js'
import { pruneContract } from './prune.contract.js'
import { storeContract } from './store.contract.js'

const harness = async () => {
  const h = await sqliteHarness()
  return { ...h, open: async (options?: Parameters<typeof h.open>[0]) => withGroupCommit(await h.open(options)) }
}
storeContract('group commit over SQLite', harness)
leaseContract('group commit over SQLite', harness)
pruneContract('group commit over SQLite', harness)
