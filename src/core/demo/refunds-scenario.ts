/**
 * The refund agent: real Stripe, GitHub and Slack targets, pointed at the
 * emulators (started here, on 127.0.0.1). The agent refunds two charges,
 * merges the pull request that fixes the bug behind them, and tells the
 * support channel. A third refund is decided on a charge that is disputed
 * before dispatch: stale. Stripe drops the answer to the first refund it
 * applies (applied, then the connection closes), and the worker is killed
 * with SIGKILL once everything else has been applied.
 *
 * The proof comes from the emulators' own ledgers: refunds per effect id and
 * per charge at "Stripe", merge commits at "GitHub", posts at "Slack".
 */
import type { TargetConfig } from '../config/types.js'
import { GithubEmulator } from '../../emulators/github.js'
import { SlackEmulator } from '../../emulators/slack.js'
import { StripeEmulator } from '../../emulators/stripe.js'
import { createTargets } from '../targets/registry.js'
import { fromMinorUnits } from '../targets/stripe/money.js'
import { crashAndRecover, verdict, type PlannedEffect, type ScenarioReport } from './scenario.js'

const TIMEOUTS = { timeoutMs: 5000, connectTimeoutMs: 2000 }
const CHANNEL = 'C0SUPPORT'

export async function refundsScenario(dir: string, log: (l: string) => void, timeoutMs: number): Promise<ScenarioReport> {
  const stripe = await new StripeEmulator().start()
  const github = await new GithubEmulator().start()
  const slack = await new SlackEmulator().start()
  try {
    log(`stripe   ${stripe.url}   github ${github.url}   slack ${slack.url}`)
    stripe.seedCharge({ id: 'ch_3PdA1', amount: 12000, currency: 'usd' })
    stripe.seedCharge({ id: 'ch_3PdB2', amount: 5000, currency: 'jpy' })
    stripe.seedCharge({ id: 'ch_3PdC3', amount: 2500, currency: 'eur' })
    const pull = github.openPull({ number: 42, title: 'Fix double-charge on plan upgrade' })
    slack.seedChannel({ id: CHANNEL, name: 'support' })

    const targets: Record<string, TargetConfig> = {
      stripe: { type: 'stripe', apiKey: stripe.apiKey, baseUrl: stripe.url, ...TIMEOUTS },
      github: { type: 'github', token: github.token, owner: github.owner, repo: github.repo, mergeMethod: 'merge', baseUrl: github.url, ...TIMEOUTS },
      slack: { type: 'slack', token: slack.token, baseUrl: slack.url, ...TIMEOUTS },
    }

    // Decision time: the agent reads each charge, the pull request and the channel.
    const live = createTargets(targets)
    const decide = async (e: Omit<PlannedEffect, 'premises' | 'thread'>): Promise<PlannedEffect> => ({
      ...e,
      thread: 'refund-agent',
      premises: await live.get(e.target)!.capture!(e.action, e.args),
    })
    const effects: PlannedEffect[] = [
      await decide({ label: 'refund 40.00 USD', target: 'stripe', action: 'refund', args: { charge: 'ch_3PdA1', amount: '40.00', currency: 'usd', reason: 'duplicate' } }),
      await decide({ label: 'refund 5000 JPY', target: 'stripe', action: 'refund', args: { charge: 'ch_3PdB2', amount: '5000', currency: 'jpy', reason: 'duplicate' } }),
      await decide({ label: `merge PR #${pull.number}`, target: 'github', action: 'merge', args: { pull_number: pull.number } }),
      await decide({ label: 'tell #support', target: 'slack', action: 'post', args: { channel: CHANNEL, text: 'Refunded the two double charges; the fix is merged.' } }),
      {
        ...(await decide({ label: 'refund 25.00 EUR', target: 'stripe', action: 'refund', args: { charge: 'ch_3PdC3', amount: '25.00', currency: 'eur' } })),
        stale: true,
      },
    ]
    for (const t of live.values()) await t.close?.()

    // Between decision and dispatch the third charge is disputed, and Stripe's first answer will be lost.
    stripe.updateCharge('ch_3PdC3', { disputed: true })
    log('customer disputed ch_3PdC3 (25.00 EUR) after the agent decided to refund it')
    stripe.fault({ mode: 'apply-then-drop', route: 'POST /v1/refunds', times: 1 })
    log('Stripe will apply the first refund that reaches it and drop the connection before answering')

    const { rows, killedWith } = await crashAndRecover({
      dir,
      targets,
      effects,
      log,
      timeoutMs,
      count: async (row) => {
        if (row.target === 'stripe') {
          return { applied: stripe.refundsFor(row.effectId).length, requests: stripe.requests.filter((r) => r.method === 'POST' && r.path === '/v1/refunds' && r.idempotencyKey === row.effectId).length }
        }
        if (row.target === 'github') return { applied: github.count(row.effectId) }
        return { applied: slack.postsFor(row.effectId).length }
      },
    })
    const ok = rows.every((r) => r.ok)
    const refunded = [...stripe.charges.values()].map(
      (c) => `  ${c.id}: ${fromMinorUnits(c.amount_refunded, c.currency)} of ${fromMinorUnits(c.amount, c.currency)} ${c.currency.toUpperCase()} refunded`,
    )
    const refundEffects = rows.filter((r) => r.target === 'stripe')
    const summary = [
      `Stripe's own ledger: ${stripe.refunds.length} refund(s) for ${refundEffects.filter((r) => r.final === 'COMMITTED').length} committed refund effect(s); ${refundEffects.every((r) => r.applied <= 1) ? 'no refund was paid twice' : 'A REFUND WAS PAID TWICE'}.`,
      ...refunded,
      `GitHub's own log: ${github.count(rows.find((r) => r.target === 'github')!.effectId)} merge commit carrying the effect id.`,
    ]
    return { name: 'refunds', title: 'Refund agent: Stripe, GitHub and Slack (emulated)', workerKilledWith: killedWith, rows, summary, verdict: verdict(rows), ok }
  } finally {
    await Promise.all([stripe.close(), github.close(), slack.close()])
  }
}
