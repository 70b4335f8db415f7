/**
 * Who may work a store with agent access (`[store] access = "agent"`): only
 * an agent proposing. A relay or a reconcile sweep run with an agent's config
 * would have every claim and append refused by the database, over and over;
 * it is refused here instead, at start, naming the key to change.
 */
import type { StoreConfig } from '../config/types.js'
import { ConfigError } from '../errors.js'

export function requireFullAccess(store: StoreConfig, who: string): void {
  if (store.kind !== 'postgres' || store.access !== 'agent') return
  throw new ConfigError(`${who} cannot run with [store] access = "agent": an agent's access only proposes effects and reads its own`, ['store.access: "agent"'], {
    hint: `Give ${who} its own interlock.toml with [store] access = "full" (the default) and connect as the relay role (\`interlock install --print-grants --relay <role>\`).`,
  })
}
