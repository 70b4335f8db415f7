/**
 * The notary scenario (docs/notary.md): one tier-3 HTTP service, reached two
 * ways. Directly, as any tier-3 target: a crash between its answer and
 * COMMITTED leaves the effect AMBIGUOUS for an operator. Behind the notary:
 * the service carries the notary's middleware (it claims each attempt and
 * writes `performed` before answering), the agent's target is notarized, and
 * recovery asks the notary, which has the service's signed `performed`: the
 * same crash ends COMMITTED, applied once.
 */
import { join } from 'node:path'
import type { TargetConfig } from '../config/types.js'
import { toBase64Url } from '../crypto/encoding.js'
import { generateKeyPair } from '../crypto/keys.js'
import { notaryLog } from '../notary/log.js'
import { notaryMiddleware } from '../notary/middleware.js'
import { startNotaryServer } from '../notary/server.js'
import { openSqliteNotaryStore } from '../notary/sqlite/sqlite-notary-store.js'
import { startHttpService } from './http-service.js'
import { crashAndRecover, verdict, type PlannedEffect, type ScenarioReport } from './scenario.js'

export async function notaryScenario(dir: string, log: (l: string) => void, timeoutMs: number): Promise<ScenarioReport> {
  const agent = generateKeyPair('relay', 'demo-agent')
  const billing = generateKeyPair('service', 'billing')
  const trusted = { agents: { 'demo-agent': agent.publicKey }, services: { billing: billing.publicKey } }
  const notaryFile = join(dir, 'notary.db')
  const notaryStore = notaryLog(openSqliteNotaryStore(notaryFile), trusted)
  const notary = await startNotaryServer(notaryStore)
  const service = await startHttpService({ around: notaryMiddleware({ notary: notary.url, service: 'billing', key: billing }) })
  try {
    log(`notary   ${notary.url} (log ${notaryFile})`)
    log(`service  ${service.url} (tier 3, writes claim and performed to the notary)`)
    const plain = (): TargetConfig => ({ type: 'http', tier: 3, url: `${service.url}/plain`, method: 'POST', headers: {}, timeoutMs: 5000, connectTimeoutMs: 2000 })
    const targets: Record<string, TargetConfig> = { direct: plain(), notarized: plain() }
    const effects: PlannedEffect[] = [
      { label: 'charge 12.00 EUR', thread: 'demo-notary', target: 'direct', action: 'charge', args: { customer: 'cus_demo_1', amount: '12.00', currency: 'EUR' } },
      { label: 'charge 12.00 EUR', thread: 'demo-notary', target: 'notarized', action: 'charge', args: { customer: 'cus_demo_2', amount: '12.00', currency: 'EUR' } },
    ]
    const { rows, killedWith } = await crashAndRecover({
      dir,
      targets,
      notary: { url: notary.url, agent: 'demo-agent', seed: toBase64Url(agent.seed), services: trusted.services, targets: ['notarized'] },
      effects,
      log,
      timeoutMs,
      count: async (row) => ({
        applied: service.counts().plain[row.effectId] ?? 0,
        requests: service.requests().filter((r) => r.path === '/plain' && r.effectId === row.effectId).length,
      }),
    })
    const summary: string[] = []
    for (const row of rows.filter((r) => r.notary)) {
      const attempts = (await notaryStore.effect(row.effectId)).attempts
      const problems = await notaryStore.verify(row.effectId)
      const said = attempts.map((a) => `attempt ${a.attempt} ${a.state}${a.claimedBy ? ` (signed by ${a.claimedBy})` : ''}`).join(', ') || 'nothing'
      summary.push(`Notary log, ${row.target}: ${said}; the chain ${problems.length === 0 ? 'verifies' : `does NOT verify: ${problems.join('; ')}`}.`)
      if (problems.length > 0) row.ok = false
    }
    summary.push('The same service reached directly cannot be asked: its effect waits AMBIGUOUS for an operator.')
    return {
      name: 'notary',
      title: 'Notary: one tier-3 service, reached directly and behind the notary',
      workerKilledWith: killedWith,
      rows,
      summary,
      verdict: verdict(rows),
      ok: rows.every((r) => r.ok),
    }
  } finally {
    await service.close()
    await notary.close()
    await notaryStore.close()
  }
}
