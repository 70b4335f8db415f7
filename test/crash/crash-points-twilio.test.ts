/**
 * Twilio Messages declared only in interlock.toml (tier 1: the effect id in
 * I-Twilio-Idempotency-Token) through every crash point, with faults, on
 * both stores: declared-points.ts. Judged by the emulator's messages per token.
 */
import { TwilioEmulator } from '../emulators/twilio.js'
import { twilioCall, twilioToml } from '../helpers/declared-apis.js'
import { declaredCrashPoints } from './declared-points.js'

declaredCrashPoints({
  name: 'twilio',
  start: () => new TwilioEmulator().start(),
  declared: (twilio) => twilioToml(twilio.url, twilio),
  tier: 1,
  call: (thread) => twilioCall(thread),
  applications: (twilio, id) => twilio.count(id),
})
