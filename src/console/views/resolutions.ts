/** What each resolution of an AMBIGUOUS effect does (docs/operators.md, "Resolve AMBIGUOUS effects"). */
import type { Resolution } from '../../core/outbox/resolve.js'

export interface ResolutionText {
  how: Resolution
  label: string
  to: string
  button: string
  does: string
}

export const RESOLUTIONS: readonly ResolutionText[] = [
  {
    how: 'applied',
    label: 'It happened',
    to: 'COMMITTED',
    button: 'Record that it happened',
    does: 'You found the effect at the service. It is recorded as done; nothing is sent.',
  },
  {
    how: 'not-applied',
    label: 'It did not happen',
    to: 'FAILED',
    button: 'Record that it did not happen',
    does: 'You found no trace of it at the service. It is recorded as failed; nothing is sent. Doing it after all is a new decision: the agent submits a new effect (with a key of its own).',
  },
  {
    how: 'redispatch',
    label: 'It did not happen; send it again now',
    to: 'DISPATCHED',
    button: 'Send it again now',
    does: 'This console sends it again at once, and journals what the target answers (COMMITTED, FAILED, or AMBIGUOUS again), signed as you. Nothing is ever re-sent unless an operator asks. A Stripe refund is looked up first and, when not found, goes back to AUTHORIZED to be checked against the charge again and sent by a relay.',
  },
]
