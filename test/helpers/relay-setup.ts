/**
 * A relay deployment for tests: an interlock.toml on a PostgreSQL database,
 * a relay key (mode 0600), HTTP targets of each tier on the test's service,
 * and an Outbox to submit through.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import type { EffectInput, Tier } from '../../src/core/effect.js'
import { parseConfig } from '../../src/core/config/load.js'
import type { InterlockConfig } from '../../src/core/config/types.js'
import { Outbox } from '../../src/core/outbox/outbox.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { createTargets } from '../../src/core/targets/registry.js'
import type { HttpService, ServiceCounts } from './http-service.js'

export interface RelayDeployment {
  dir: string
  configFile: string
  keyFile: string
  config: InterlockConfig
  store: Store
  outbox: Outbox
  close(): Promise<void>
}

/** `relayConfig`: more keys of [relay] (lines); `storeConfig`: more keys of [store]. */
export async function relayDeployment(
  dbUrl: string,
  service: HttpService,
  options: { schema?: string; extraConfig?: string; relayConfig?: string; storeConfig?: string } = {},
): Promise<RelayDeployment> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-relay-deploy-'))
  const keyFile = join(dir, 'relay.key')
  writeKeyFile(keyFile, generateKeyPair('relay', 'test-relay'))
  const configFile = join(dir, 'interlock.toml')
  const text = `[store]
kind = "postgres"
url = "${dbUrl}"
schema = "${options.schema ?? 'interlock'}"
${options.storeConfig ?? ''}

[gate]
max_attempts = 4
backoff_ms = 20

[relay]
key = "relay.key"
${options.relayConfig ?? ''}

[targets.t1]
type = "http"
tier = 1
url = "${service.url}/idempotent"
timeout_ms = 3000

[targets.t2]
type = "http"
tier = 2
url = "${service.url}/plain"
query_url = "${service.url}/applied/{effect_id}"
timeout_ms = 3000

[targets.t3]
type = "http"
tier = 3
url = "${service.url}/plain"
timeout_ms = 3000
${options.extraConfig ?? ''}`
  writeFileSync(configFile, text)
  const config = parseConfig(text, { file: configFile })
  await install(config.store)
  const store = await openStore(config.store)
  const outbox = new Outbox({ store, targets: createTargets(config.targets).values() })
  return {
    dir,
    configFile,
    keyFile,
    config,
    store,
    outbox,
    close: async () => {
      await outbox.close()
      await store.close()
    },
  }
}

export const TIER_OF: Record<string, Tier> = { t1: 1, t2: 2, t3: 3 }

/** Effects spread over the three targets and over `threads` journals. */
export function effectInputs(n: number, threads = 50, prefix = 'e'): EffectInput[] {
  return Array.from({ length: n }, (_, i) => ({
    thread: `agent-${i % threads}`,
    target: `t${(i % 3) + 1}`,
    action: 'charge',
    args: { n: `${prefix}-${i}` },
  }))
}

/** How many times the service applied the effect (tier 1 by idempotency key, 2 and 3 per effect id). */
export function applications(counts: ServiceCounts, target: string, id: string): number {
  return (target === 't1' ? counts.idempotent[id] : counts.plain[id]) ?? 0
}
