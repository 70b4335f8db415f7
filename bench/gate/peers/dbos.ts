/**
 * DBOS: a workflow of one no-op step (`DBOS.registerStep`), run to its end.
 * DBOS journals the workflow's status and the step's output in its system
 * database: here, the same PostgreSQL as Interlock's store.
 */
import { DBOS } from '@dbos-inc/dbos-sdk'
import type { Peer } from './peer.js'

export async function dbosPeer(url: string): Promise<Peer> {
  DBOS.setConfig({ name: 'interlock-bench', systemDatabaseUrl: url, logLevel: 'error' })
  const step = DBOS.registerStep(async () => 1, { name: 'noop' })
  const workflow = DBOS.registerWorkflow(async () => step(), { name: 'one-step' })
  await DBOS.launch()
  return {
    name: 'DBOS workflow step',
    one: async () => void (await workflow()),
    close: () => DBOS.shutdown(),
  }
}
