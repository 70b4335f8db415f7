/** Interlock: one no-op tier-1 effect through `gate.submit` on the PostgreSQL store. */
import { Gate } from '../../../src/core/gate.js'
import { openStore } from '../../../src/core/stores/open.js'
import { install } from '../../../src/core/stores/migrate.js'
import type { PostgresStoreConfig } from '../../../src/core/config/types.js'
import type { EffectTarget } from '../../../src/core/targets/target.js'
import type { Peer } from './peer.js'

const noop: EffectTarget = { name: 'noop', tier: 1, validatePremises: async () => [], apply: async (e) => ({ ok: e.id }) }

export async function interlockPeer(url: string): Promise<Peer> {
  const config: PostgresStoreConfig = { kind: 'postgres', url, schema: 'interlock_bench' }
  await install(config)
  const store = await openStore(config)
  const gate = new Gate({ store, targets: [noop] })
  let i = 0
  return {
    name: 'Interlock gate.submit',
    one: async () => {
      const out = await gate.submit({ thread: 'bench-steps', target: 'noop', action: 'noop', args: { i: i++ } })
      if (out.status !== 'committed') throw new Error(`unexpected outcome ${out.status}`)
    },
    close: async () => {
      await gate.close()
      await store.close()
    },
  }
}
