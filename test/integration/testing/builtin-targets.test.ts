/**
 * agent-interlock/testing against the built-in targets, as a user would run
 * it against their own: each declared as a [targets.<name>] table, against
 * its emulator (src/emulators), through the tier contract and the crash
 * points, judged by the emulator's own ledger. Stripe is tier 1, GitHub
 * tier 2, SendGrid tier 3; the templates of the http target (Twilio, Jira,
 * Linear) run the kit in their own files (declared-points.ts for the crash points).
 */
import { describe, it } from 'vitest'
import { crashPoints, registerContract, tierContract, type TargetUnderTest } from '../../../src/testing/index.js'
import { GithubEmulator } from '../../emulators/github.js'
import { SendgridEmulator } from '../../emulators/sendgrid.js'
import { StripeEmulator } from '../../emulators/stripe.js'

const STRIPE_KEY = 'sk_test_51KitEmulatorKeyThatMustNeverLeak'
const stripe: TargetUnderTest<StripeEmulator> = {
  name: 'payments',
  service: {
    start: async () => {
      const s = await new StripeEmulator(STRIPE_KEY).start()
      s.seedCharge({ id: 'ch_kit', amount: 100_000, currency: 'usd' })
      return s
    },
    stop: (s) => s.close(),
  },
  table: (s) => ({ type: 'stripe', api_key: '${STRIPE_API_KEY}', base_url: s.url, timeout_ms: 3000 }),
  env: { STRIPE_API_KEY: STRIPE_KEY },
  call: (thread) => ({ thread, target: 'payments', action: 'refund', args: { charge: 'ch_kit', amount: '12.50', currency: 'usd' } }),
  applications: (effect, s) => s.refundsFor(effect.id).length,
  changeWorld: (effect, s) => s.updateCharge(String(effect.args.charge), { disputed: true }),
}

const github: TargetUnderTest<GithubEmulator> = {
  name: 'gh',
  service: { start: () => new GithubEmulator().start(), stop: (g) => g.close() },
  table: (g) => ({ type: 'github', token: '${GITHUB_TOKEN}', owner: g.owner, repo: g.repo, base_url: g.url, timeout_ms: 3000 }),
  env: (g) => ({ GITHUB_TOKEN: g.token }),
  // A pull request of its own for each effect: merging one is what the tier-2 query must find, and only that one.
  call: (thread, g) => ({ thread, target: 'gh', action: 'merge', args: { pull_number: g.openPull().number } }),
  applications: (effect, g) => g.count(effect.id),
  changeWorld: (effect, g) => void g.pushToPull(Number(effect.args.pull_number)),
}

const SENDGRID_KEY = 'SG.kit-emulator.ThisKeyMustNeverLeakIntoAnything'
const sendgrid: TargetUnderTest<SendgridEmulator> = {
  name: 'mail',
  service: { start: () => new SendgridEmulator(SENDGRID_KEY).start(), stop: (s) => s.close() },
  table: (s) => ({ type: 'sendgrid', api_key: '${SENDGRID_API_KEY}', base_url: s.url, timeout_ms: 3000 }),
  env: { SENDGRID_API_KEY: SENDGRID_KEY },
  call: (thread) => ({ thread, target: 'mail', action: 'send', args: { from: { email: 'billing@shop.example' }, to: 'ada@example.org', subject: 'Your refund', text: `Refund for ${thread}.` } }),
  applications: (effect, s) => s.sentFor(effect.id).length,
  changeWorld: (_effect, s) => s.suppress('ada@example.org'),
}

describe.each([
  ['stripe (tier 1)', stripe],
  ['github (tier 2)', github],
  ['sendgrid (tier 3)', sendgrid],
] as [string, TargetUnderTest<unknown>][])('%s', (_name, target) => {
  registerContract([...tierContract(target), ...crashPoints(target)], { it })
})
