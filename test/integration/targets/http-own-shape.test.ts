/**
 * What a request template buys, through a real gate on a real journal: a
 * payments service of the kind an agent's refund tool calls, which reads
 * `charge_id` and `amount_cents` from its JSON body and, like many a
 * handler, answers 200 whatever it made of them.
 *
 * Declared as before (no template), the target sends Interlock's envelope;
 * the service finds no charge_id, refunds nothing it can name, answers 200,
 * and the effect is COMMITTED: the agent is told the refund succeeded. With
 * the template declared in interlock.toml, the same call refunds ch_1 by
 * 1250 cents, and a call lacking amount_cents is refused at submit, naming
 * it, with nothing journaled and nothing sent.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../../src/core/config/load.js'
import { toEffect } from '../../../src/core/effect.js'
import { InputError } from '../../../src/core/errors.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import { sqliteGate } from '../../helpers/sqlite-gate.js'

interface Refund {
  charge_id: unknown
  amount_cents: unknown
  key: string | undefined
}

let server: http.Server
let url = ''
const refunds: Refund[] = []
/** The charges the service reads; each read stamps a new updated_at, as many APIs do. */
const charges = new Map<string, { status: string; amount: number }>()
let reads = 0

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8').on('data', (d: string) => (text += d))
    req.on('end', () => {
      const charge = /^\/v1\/charges\/([^/]+)$/.exec(req.url ?? '')
      if (req.method === 'GET' && charge) {
        const c = charges.get(decodeURIComponent(charge[1]!))
        if (!c) return res.writeHead(404).end()
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: charge[1], ...c, updated_at: ++reads }))
        return
      }
      const body = JSON.parse(text || '{}') as Record<string, unknown>
      // The handler an agent's refund tool was written against: it trusts its input.
      refunds.push({ charge_id: body.charge_id, amount_cents: body.amount_cents, key: req.headers['idempotency-key'] as string | undefined })
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ refund: { id: `re_${refunds.length}`, charge: body.charge_id ?? null } }))
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

function targetsFrom(toml: string) {
  return createTargets(parseConfig(toml, { file: '/srv/agent/interlock.toml', env: {} }).targets)
}

const CALL = { thread: 'support-42', target: 'payments', action: 'refund', args: { charge_id: 'ch_1', amount_cents: 1250 } }

describe('a payments service that needs its own body shape', () => {
  it('without a template: the envelope the service cannot read, a refund of nothing, and COMMITTED all the same', async () => {
    const toml = `[targets.payments]\ntype = "http"\ntier = 1\nurl = "${url}/v1/refunds"\n`
    const g = await sqliteGate(() => [...targetsFrom(toml).values()])
    try {
      refunds.length = 0
      const outcome = await g.gate.submit(CALL)
      expect(outcome.status).toBe('committed')
      // The wrong outcome the agent is told is a success.
      expect(refunds).toEqual([{ charge_id: undefined, amount_cents: undefined, key: toEffect(CALL).id }])
    } finally {
      await g.cleanup()
    }
  })

  it('with the template in interlock.toml: ch_1 refunded by 1250 cents, the receipt holds the refund\'s id', async () => {
    const toml = `[targets.payments]
type = "http"
tier = 1
url = "${url}/v1/refunds"

[targets.payments.actions.refund]
args = ["charge_id", "amount_cents"]
body = '{"charge_id": "{args.charge_id}", "amount_cents": "{args.amount_cents}"}'
receipt = "/refund/id"
`
    const g = await sqliteGate(() => [...targetsFrom(toml).values()])
    try {
      refunds.length = 0
      const outcome = await g.gate.submit(CALL)
      expect(outcome).toMatchObject({ status: 'committed', receipt: { status: 200, id: 're_1' } })
      expect(refunds).toEqual([{ charge_id: 'ch_1', amount_cents: 1250, key: toEffect(CALL).id }])

      // A call lacking an argument the template needs: refused at submit, named, nothing journaled or sent.
      const lacking = { ...CALL, thread: 'support-43', args: { charge_id: 'ch_2' } }
      const refused = await g.gate.submit(lacking).catch((e: unknown) => e)
      expect(refused).toBeInstanceOf(InputError)
      expect((refused as InputError).message).toContain('args.amount_cents')
      expect(await g.store.get(toEffect(lacking).id)).toBeUndefined()
      expect(refunds).toHaveLength(1)
    } finally {
      await g.cleanup()
    }
  })

  it('premises: only the values that matter are compared, so a field that changes on every read does not reject everything', async () => {
    const toml = (pointers: string) => `[targets.payments]
type = "http"
tier = 1
url = "${url}/v1/refunds"

[targets.payments.actions.refund]
body = { charge_id = "{args.charge_id}", amount_cents = "{args.amount_cents}" }
rests_on = [{ url = "${url}/v1/charges/{args.charge_id}"${pointers} }]
`
    for (const [name, pointers, expected] of [
      ['the whole body', '', 'rejected'],
      ['/status and /amount', ', pointers = ["/status", "/amount"]', 'committed'],
    ] as const) {
      const g = await sqliteGate(() => [...targetsFrom(toml(pointers)).values()])
      try {
        refunds.length = 0
        charges.set('ch_9', { status: 'succeeded', amount: 5000 })
        const call = { ...CALL, thread: `premises-${name.replace(/[^a-z]/g, "-")}`, args: { charge_id: 'ch_9', amount_cents: 100 } }
        const premises = await g.gate.capture('payments', 'refund', call.args)
        expect(premises, name).toMatchObject({ reads: [expect.any(Object)] })
        // updated_at moves on by the next read; with pointers nothing that matters changed.
        const outcome = await g.gate.submit({ ...call, premises })
        expect(outcome.status, name).toBe(expected)
        expect(refunds.length, name).toBe(expected === 'committed' ? 1 : 0)
      } finally {
        await g.cleanup()
      }
    }
    // A change where it matters is a violation, named by its pointer; nothing is sent.
    const g = await sqliteGate(() => [...targetsFrom(toml(', pointers = ["/status", "/amount"]')).values()])
    try {
      refunds.length = 0
      charges.set('ch_8', { status: 'succeeded', amount: 5000 })
      const call = { ...CALL, thread: 'premises-disputed', args: { charge_id: 'ch_8', amount_cents: 100 } }
      const premises = await g.gate.capture('payments', 'refund', call.args)
      charges.set('ch_8', { status: 'disputed', amount: 5000 })
      const outcome = await g.gate.submit({ ...call, premises })
      expect(outcome).toMatchObject({ status: 'rejected', violations: ['premise read 0 changed at /status since the decision (was "succeeded", now "disputed")'] })
      expect(refunds).toEqual([])
    } finally {
      await g.cleanup()
    }
  })
})
