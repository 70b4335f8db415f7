/**
 * agent-interlock/testing against the built-in targets of vendor APIs, as a
 * user would run it against their own: each declared as a [targets.<name>]
 * table, against its emulator (src/emulators), through the tier contract and
 * the crash points, judged by the emulator's own record. Stripe is tier 1,
 * GitHub and S3 tier 2, SendGrid and Slack tier 3. The targets on local
 * services (repo, postgres_row, http without a template, webhook, mcp) are in
 * builtin-local-targets.test.ts; the templates of the http target (Twilio,
 * Jira, Linear) run the kit in their own files (declared-points.ts for the
 * crash points), the README's module in its own.
 */
import { describe, it } from 'vitest'
import { crashPoints, registerContract, tierContract, type TargetUnderTest } from '../../../src/testing/index.js'
import { GithubEmulator } from '../../emulators/github.js'
import { S3Emulator } from '../../emulators/s3.js'
import { SendgridEmulator } from '../../emulators/sendgrid.js'
import { SlackEmulator } from '../../emulators/slack.js'
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

// An object of its own per effect, at a key named after its thread: absent when decided, so the put is conditioned on
// If-None-Match. The bucket is versioned, so S3 keeps every put and none can hide another.
const s3: TargetUnderTest<S3Emulator> = {
  name: 'docs',
  service: { start: async () => (await new S3Emulator().start()).createBucket('kit-docs', { versioning: true }), stop: (s) => s.close() },
  table: (s) => ({
    type: 's3',
    bucket: 'kit-docs',
    region: s.region,
    access_key_id: '${AWS_ACCESS_KEY_ID}',
    secret_access_key: '${AWS_SECRET_ACCESS_KEY}',
    endpoint: s.url,
    path_style: true,
    timeout_ms: 3000,
  }),
  env: (s) => ({ AWS_ACCESS_KEY_ID: s.accessKeyId, AWS_SECRET_ACCESS_KEY: s.secretAccessKey }),
  call: (thread) => ({ thread, target: 'docs', action: 'put', args: { key: `reports/${thread}.txt`, body: `Report for ${thread}.`, content_type: 'text/plain' } }),
  // The objects whose metadata carries the effect id, as S3 keeps them: one put of it, or none.
  applications: (effect, s) => s.versions('kit-docs', String(effect.args.key)).filter((v) => v.metadata['interlock-effect'] === effect.id).length,
  changeWorld: (effect, s) => void s.putDirect('kit-docs', String(effect.args.key), 'another writer got there first'),
}

const SLACK_TOKEN = 'xoxb-kit-emulator-TokenThatMustNeverLeak'
const slack: TargetUnderTest<SlackEmulator> = {
  name: 'chat',
  service: {
    start: async () => {
      const s = await new SlackEmulator(SLACK_TOKEN).start()
      s.seedChannel({ id: 'C0OPS', name: 'ops' })
      return s
    },
    stop: (s) => s.close(),
  },
  table: (s) => ({ type: 'slack', token: '${SLACK_TOKEN}', base_url: s.url, timeout_ms: 3000 }),
  env: { SLACK_TOKEN },
  call: (thread) => ({ thread, target: 'chat', action: 'post', args: { channel: 'C0OPS', text: `Refund sent for ${thread}.` } }),
  applications: (effect, s) => s.postsFor(effect.id).length,
  changeWorld: (_effect, s) => void (s.channels.get('C0OPS')!.is_archived = true),
}

describe.each([
  ['stripe (tier 1)', stripe],
  ['github (tier 2)', github],
  ['s3 (tier 2)', s3],
  ['sendgrid (tier 3)', sendgrid],
  ['slack (tier 3)', slack],
] as [string, TargetUnderTest<unknown>][])('%s', (_name, target) => {
  registerContract([...tierContract(target), ...crashPoints(target)], { it })
})
