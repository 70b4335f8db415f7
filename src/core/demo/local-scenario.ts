/**
 * The local scenario, on nothing but this machine: a real git repository
 * (tier 2) and a small HTTP service with an endpoint that honours
 * Idempotency-Key (tier 1) and one that does not (tier 3). A scripted agent
 * reads the repository (symbol premises); a teammate then edits one function
 * it read, so one of its four decisions is stale.
 *
 * Symbol premises need typescript, an optional peer dependency. Without it the
 * agent premises the whole file, says so, and the teammate's edit then makes
 * both decisions resting on that file stale: the demo shows the precision
 * this installation has rather than failing on a package it does not need.
 */
import { join } from 'node:path'
import type { TargetConfig } from '../config/types.js'
import type { Tier } from '../effect.js'
import { captureRepoPremises } from '../targets/repo/premises.js'
import { symbolsUnavailable } from '../targets/repo/symbols.js'
import { startHttpService } from './http-service.js'
import { commitsFor, makeRepo, teammateEdit } from './local-repo.js'
import { crashAndRecover, verdict, type PlannedEffect, type ScenarioReport } from './scenario.js'

export async function localScenario(dir: string, log: (l: string) => void, timeoutMs: number): Promise<ScenarioReport> {
  const repo = join(dir, 'repo')
  const service = await startHttpService()
  try {
    await makeRepo(repo)
    log(`repo     ${repo}`)
    log(`service  ${service.url}`)
    const targets: Record<string, TargetConfig> = {
      payments: http(1, `${service.url}/idempotent`),
      notify: http(3, `${service.url}/plain`),
      repo: { type: 'repo', path: repo, branch: 'main', author: 'Interlock Demo <demo@example.invalid>' },
    }

    // The agent reads the pricing module before deciding: each decision rests on one function.
    const unavailable = await symbolsUnavailable()
    if (unavailable) log(`${unavailable.message}: each decision rests on the whole of src/pricing.ts, not one function`)
    const precise = !unavailable
    const readPricing = (symbol: string) => captureRepoPremises(repo, [precise ? { file: 'src/pricing.ts', symbol } : 'src/pricing.ts'])
    const limitPremise = await readPricing('refundLimit')
    const receiptPremise = await readPricing('formatReceipt')
    const effects: PlannedEffect[] = [
      { label: 'refund', thread: 'demo', target: 'payments', action: 'refund', args: { charge: 'ch_demo_1', amount: '25.00', currency: 'USD' } },
      {
        label: 'record refund',
        thread: 'demo',
        target: 'repo',
        action: 'write_file',
        args: { path: 'refunds/ch_demo_1.md', content: 'Refunded 25.00 USD (within refundLimit).\n', message: 'Record refund ch_demo_1' },
        premises: limitPremise,
        stale: !precise,
      },
      { label: 'notify customer', thread: 'demo', target: 'notify', action: 'send', args: { to: 'customer@example.invalid', text: 'Your refund is on its way.' } },
      {
        label: 'stale receipt fix',
        thread: 'demo',
        target: 'repo',
        action: 'write_file',
        args: { path: 'receipts/template.txt', content: 'Refunded {amount} {currency}\n', message: 'Receipt template' },
        premises: receiptPremise,
        stale: true,
      },
    ]
    // The refund record still holds when it rests on refundLimit: the teammate's edit is elsewhere in the same file.
    await teammateEdit(repo)
    log('teammate edited formatReceipt in src/pricing.ts after the agent read it')

    const { rows, killedWith } = await crashAndRecover({
      dir,
      targets,
      effects,
      log,
      timeoutMs,
      count: async (row) => {
        if (row.target === 'repo') return { applied: await commitsFor(repo, row.effectId) }
        const path = row.target === 'payments' ? '/idempotent' : '/plain'
        const counts = service.counts()
        return {
          applied: (path === '/idempotent' ? counts.idempotent : counts.plain)[row.effectId] ?? 0,
          requests: service.requests().filter((r) => r.path === path && (r.idempotencyKey ?? r.effectId) === row.effectId).length,
        }
      },
    })
    return {
      name: 'local',
      title: 'Local: a git repository and an HTTP service',
      workerKilledWith: killedWith,
      rows,
      summary: [],
      verdict: verdict(rows),
      ok: rows.every((r) => r.ok),
    }
  } finally {
    await service.close()
  }
}

function http(tier: Tier, url: string): TargetConfig {
  return { type: 'http', tier, url, method: 'POST', headers: {}, timeoutMs: 5000, connectTimeoutMs: 2000 }
}
