/**
 * Twilio Messages declared only in interlock.toml (test/helpers/declared-apis.ts),
 * through a real gate on a real journal, against the emulator that follows
 * Twilio's documentation (src/emulators/twilio.ts). Judged by the
 * emulator's own messages, never the journal.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../../src/core/config/load.js'
import { toEffect } from '../../../src/core/effect.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import { registerContract, tierContract } from '../../../src/testing/index.js'
import { TwilioEmulator } from '../../emulators/twilio.js'
import { declaredTable, twilioCall, twilioToml } from '../../helpers/declared-apis.js'
import { journalText, sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'

let twilio: TwilioEmulator
beforeAll(async () => {
  twilio = await new TwilioEmulator().start()
})
afterAll(() => twilio.close())
afterEach(() => {
  twilio.clearFaults()
  twilio.honoursToken = true
})

function gateFor(declared = twilioToml(twilio.url, twilio)): Promise<SqliteGate> {
  const config = parseConfig(declared.toml, { file: '/srv/agent/interlock.toml', env: declared.env })
  return sqliteGate(() => [...createTargets(config.targets).values()], { retry: { maxAttempts: 3, backoffMs: 1 } })
}

describe('Twilio Messages, tier 1, declared in interlock.toml', () => {
  it('sends the form Twilio reads, the effect id as I-Twilio-Idempotency-Token; COMMITTED with the message sid as receipt', async () => {
    const g = await gateFor()
    try {
      const call = twilioCall('order-1001')
      const outcome = await g.gate.submit(call)
      const id = toEffect(call).id
      const [m] = twilio.messagesFor(id)
      expect(m).toMatchObject({ to: '+15558675310', from: '+15005550006', body: 'Your order order-1001 has shipped.', status: 'queued' })
      expect(outcome).toMatchObject({ status: 'committed', receipt: { status: 201, id: m!.sid } })
      // The Auth Token (inside the Basic credential) is nowhere in the journal.
      expect(await journalText(g.store)).not.toContain(Buffer.from(`${twilio.accountSid}:${twilio.authToken}`).toString('base64'))
    } finally {
      await g.cleanup()
    }
  })

  it('an answer lost after Twilio created the message: sent again with the same token, one message', async () => {
    const g = await gateFor()
    try {
      const call = twilioCall('order-1002')
      twilio.fault({ mode: 'apply-then-drop' })
      expect((await g.gate.submit(call)).status).toBe('committed')
      expect(twilio.count(toEffect(call).id)).toBe(1)
      expect(twilio.messages.filter((m) => m.body.includes('order-1002'))).toHaveLength(1)
    } finally {
      await g.cleanup()
    }
  })

  it('a 500 after it created the message, a reset before it read the request: one message each', async () => {
    const g = await gateFor()
    try {
      for (const mode of ['apply-then-5xx', 'reset-before-apply', 'reset-after-apply'] as const) {
        const call = twilioCall(`order-${mode}`)
        twilio.fault({ mode })
        expect((await g.gate.submit(call)).status, mode).toBe('committed')
        expect(twilio.count(toEffect(call).id), mode).toBe(1)
      }
    } finally {
      await g.cleanup()
    }
  })

  it('a number Twilio refuses (21211) is FAILED with its message; 429 waits as long as Retry-After says, then sends once', async () => {
    const g = await gateFor()
    try {
      const bad = twilioCall('order-1003', '555-0100')
      const failed = await g.gate.submit(bad)
      expect(failed.status).toBe('failed')
      expect(JSON.stringify(failed)).toContain("Invalid 'To' Phone Number")
      expect(twilio.count(toEffect(bad).id)).toBe(0)

      const call = twilioCall('order-1004')
      twilio.throttleNext()
      expect((await g.gate.submit(call)).status).toBe('committed')
      expect(g.slept).toContain(1000)
      expect(twilio.count(toEffect(call).id)).toBe(1)
    } finally {
      await g.cleanup()
    }
  })

  it('a wrong Auth Token is FAILED (401, 20003) and never named in the outcome or the journal', async () => {
    const wrong = twilioToml(twilio.url, { accountSid: twilio.accountSid, basicAuth: `Basic ${Buffer.from(`${twilio.accountSid}:not_the_token_0000`).toString('base64')}` })
    const g = await gateFor(wrong)
    try {
      const outcome = await g.gate.submit(twilioCall('order-1005'))
      expect(outcome.status).toBe('failed')
      expect(JSON.stringify(outcome)).toContain('Authenticate')
      const text = `${JSON.stringify(outcome)}\n${await journalText(g.store)}`
      expect(text).not.toContain(wrong.env.TWILIO_BASIC_AUTH!.slice('Basic '.length))
    } finally {
      await g.cleanup()
    }
  })
})

describe('what the template buys, and what tier 1 rests on', () => {
  it('without a template the envelope goes out as JSON: Twilio finds no To and refuses it (21604); nothing is sent', async () => {
    const bare = `[targets.sms]\ntype = "http"\ntier = 1\nurl = "${twilio.url}/2010-04-01/Accounts/\${TWILIO_ACCOUNT_SID}/Messages.json"\nheaders = { Authorization = "\${TWILIO_BASIC_AUTH}" }\n`
    const g = await gateFor({ toml: bare, env: twilioToml(twilio.url, twilio).env })
    try {
      const outcome = await g.gate.submit(twilioCall('order-1006'))
      expect(outcome.status).toBe('failed')
      expect(JSON.stringify(outcome)).toContain("A 'To' phone number is required.")
      expect(twilio.messages.filter((m) => m.body.includes('order-1006'))).toEqual([])
    } finally {
      await g.cleanup()
    }
  })

  it('if the API did not deduplicate by the token (its reference says nothing of it), a lost answer would send the message twice: tier 1 rests on that', async () => {
    twilio.honoursToken = false
    const g = await gateFor()
    try {
      const call = twilioCall('order-1007')
      twilio.fault({ mode: 'apply-then-drop' })
      expect((await g.gate.submit(call)).status).toBe('committed')
      expect(twilio.messages.filter((m) => m.body.includes('order-1007'))).toHaveLength(2)
    } finally {
      await g.cleanup()
    }
  })
})

// Its crash points run by the same kit: test/crash/crash-points-twilio.test.ts.
describe('the tier contract (agent-interlock/testing)', () => {
  registerContract(
    tierContract({
      name: 'sms',
      service: { start: () => new TwilioEmulator().start(), stop: (t) => t.close() },
      table: (t) => declaredTable(twilioToml(t.url, t), 'sms'),
      env: (t) => twilioToml(t.url, t).env,
      call: (thread) => twilioCall(thread),
      applications: (effect, t) => t.count(effect.id),
    }),
    { it },
  )
})
