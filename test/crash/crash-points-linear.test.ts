/**
 * Linear's issueCreate declared only in interlock.toml (tier 2: a GraphQL
 * search for the marker the mutation wrote) through every crash point, with
 * faults, on both stores: declared-points.ts. Judged by the emulator's
 * issues per marker.
 */
import { LinearEmulator } from '../emulators/linear.js'
import { linearCall, linearToml } from '../helpers/declared-apis.js'
import { declaredCrashPoints } from './declared-points.js'

let teamId = ''

declaredCrashPoints({
  name: 'linear',
  start: async () => {
    const linear = await new LinearEmulator().start()
    teamId = linear.teamId
    return linear
  },
  declared: (linear) => linearToml(linear.url),
  tier: 2,
  call: (thread) => linearCall(thread, teamId),
  applications: (linear, id) => linear.issuesFor(id).length,
})
