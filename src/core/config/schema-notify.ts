/**
 * [[notify]]: who is told when an effect waits for people, and where
 * (notify/: each notice is itself an effect, sent through the gate).
 */
import { DURATION } from './schema-policy.js'

export const NOTIFY_EVENTS = ['held', 'release', 'ambiguous', 'ambiguous_waiting', 'failed', 'refused'] as const

const names = (description: string) => ({ type: 'array', minItems: 1, items: { type: 'string', minLength: 1 }, description }) as const

export const notifyRule = {
  type: 'object',
  additionalProperties: false,
  required: ['on', 'channel'],
  properties: {
    name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$', patternErrorMessage: 'letters, digits, "_" and "-" (at most 64 characters)', description: 'Names the rule in notices and logs. Default: notify-<n>, its place in the file (1 for the first).' },
    on: {
      type: 'array',
      minItems: 1,
      uniqueItems: true,
      items: { enum: [...NOTIFY_EVENTS] },
      description:
        'Events that make a notice: "held" (a rule holds an effect for operators), "release" (a release was signed and the quorum is not yet complete), "ambiguous" (an effect became AMBIGUOUS), "ambiguous_waiting" (an AMBIGUOUS effect has waited longer than `waiting`), "failed" (the service refused an effect), "refused" (a relay refused to send an effect whose row or authorization did not stand).',
    },
    channel: { type: 'string', minLength: 1, description: 'The [targets.<name>] the notices go to: of type "slack" (chat.postMessage to `slack_channel`), "sendgrid" (mail `to` / `from`) or "webhook" (a signed JSON POST).' },
    targets: names('Only effects on these targets. Default: all (never the notices themselves).'),
    rules: names('Only effects held by these [[policy.rules]] (for held and release). Default: any.'),
    principals: names('Only effects of these principals (user:<login>, token:<name>, oauth:<iss>#<sub>). Default: any.'),
    window: {
      type: 'string',
      pattern: '^(0|[1-9][0-9]*)(ms|s|m|h|d)$',
      patternErrorMessage: 'a duration like 30s, 1m; "0s" sends one notice per event',
      description: 'Events of this rule within one window of this length are told in one notice, with counts and the first few ids (a target down: 10,000 AMBIGUOUS effects, one notice). Sent once the window has passed. Default "1m"; "0s": one notice per event, at once.',
    },
    waiting: { type: 'string', pattern: DURATION, patternErrorMessage: 'a duration like 30m, 4h, 1d', description: 'For "ambiguous_waiting" (required there): how long an AMBIGUOUS effect waits before it is told again.' },
    slack_channel: { type: 'string', minLength: 1, description: 'Slack: the channel to post in (#ops, or a channel id).' },
    to: { type: 'array', minItems: 1, items: { type: 'string', minLength: 3 }, description: 'Email: the recipients.' },
    from: { type: 'string', minLength: 3, description: 'Email: the sender (a verified sender of the SendGrid account).' },
    console_url: { type: 'string', pattern: '^https?://', description: 'The console\'s address (`interlock console`): each notice links to the effect there.' },
  },
} as const

export const notify = { type: 'array', description: 'Notification rules, as [[notify]] tables: docs/operators.md, "Being told".', items: notifyRule } as const
