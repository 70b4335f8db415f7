/** The store contract holds through the group-commit decorator (SQLite beneath). */
import { withGroupCommit } from '../../src/core/stores/group-commit.js'
import { sqliteHarness } from './sqlite-harness.js'
import { storeContract } from './store.contract.js'

storeContract('group commit over SQLite', async () => {
  const h = await sqliteHarness()
  return { ...h, open: async (options) => withGroupCommit(await h.open(options)) }
})
