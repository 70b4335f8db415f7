import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { JsonObject } from '../../../src/core/canonical-json.js'
import { parseConfig } from '../../../src/core/config/load.js'
import { toEffect } from '../../../src/core/effect.js'
import { DispatchFault, InputError } from '../../../src/core/errors.js'
import { createTarget } from '../../../src/core/targets/registry.js'
import { SlackMessageTarget } from '../../../src/core/targets/slack/index.js'
import type { FaultMode } from '../../emulators/emulator.js'
import { SlackEmulator } from '../../emulators/slack.js'
import { journalDispatched, journalText, sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'
import { dispatchFault } from '../../helpers/dispatch-fault.js'

const TOKEN = 'xoxb-1111-2222-InterlockTokenThatMustNeverLeak'
const first = { attempt: 1, recovering: false }
let slack: SlackEmulator
let harness: SqliteGate | undefined
const targets: SlackMessageTarget[] = []

beforeEach(async () => {
  slack = await new SlackEmulator(TOKEN).start()
  slack.seedChannel({ id: 'C0OPS', name: 'ops' })
  slack.seedChannel({ id: 'C0OUTSIDE', name: 'outside', is_member: false })
})
afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
  for (const t of targets.splice(0)) await t.close()
  await slack.close()
})

function target(over: { timeoutMs?: number; baseUrl?: string; token?: string } = {}): SlackMessageTarget {
  const t = new SlackMessageTarget('chat', { token: TOKEN, baseUrl: slack.url, timeoutMs: 2000, connectTimeoutMs: 1000, ...over })
  targets.push(t)
  return t
}

async function gate(opts: Parameters<typeof sqliteGate>[1] = {}, over: Parameters<typeof target>[0] = {}): Promise<SqliteGate> {
  harness = await sqliteGate(() => [target(over)], opts)
  return harness
}

const post = (args: JsonObject = {}): JsonObject => ({ channel: 'C0OPS', text: 'Refund of 12.50 USD sent for order 7.', ...args })
const input = (args: JsonObject, premises?: JsonObject, action = 'post') => ({ thread: 'order-7', target: 'chat', action, args, premises })
const posts = () => slack.requests.filter((r) => r.path === '/api/chat.postMessage')

async function fault(p: Promise<unknown>): Promise<DispatchFault> {
  const e = await dispatchFault(p)
  expect(JSON.stringify({ m: (e as Error).message, j: (e as DispatchFault).toJSON() })).not.toContain(TOKEN)
  return e as DispatchFault
}

describe('Slack post through the gate', () => {
  it('captures the channel, posts once with the effect id in the metadata, journals no token', async () => {
    const { gate: g, store } = await gate()
    const args = post()
    const premises = await g.capture('chat', 'post', args)
    expect(premises).toEqual({ channel: { id: 'C0OPS', name: 'ops', is_archived: false } })

    const out = await g.submit(input(args, premises))
    expect(out).toMatchObject({ status: 'committed', receipt: { channel: 'C0OPS', ts: expect.stringMatching(/^\d+\.\d{6}$/) } })
    expect(slack.count(out.effectId)).toBe(1)
    expect(slack.postsFor(out.effectId)[0]!.body).toEqual({
      channel: 'C0OPS',
      text: 'Refund of 12.50 USD sent for order 7.',
      metadata: { event_type: 'interlock_effect', event_payload: { interlock_effect_id: out.effectId } },
    })
    expect(await journalText(store)).not.toContain(TOKEN)
  })

  it('rejects a post to a channel archived or gone since the decision, and posts nothing', async () => {
    const { gate: g } = await gate()
    slack.seedChannel({ id: 'C0TEMP', name: 'temp' })
    const archived = await g.capture('chat', 'post', post())
    const gone = await g.capture('chat', 'post', post({ channel: 'C0TEMP' }))
    slack.channels.get('C0OPS')!.is_archived = true
    slack.channels.delete('C0TEMP')

    const a = await g.submit(input(post(), archived))
    const b = await g.submit(input(post({ channel: 'C0TEMP' }), gone))
    expect(a).toMatchObject({ status: 'rejected', violations: ['channel C0OPS (#ops) was archived since the decision'] })
    expect(b).toMatchObject({ status: 'rejected', violations: ['channel C0TEMP (#temp) is gone'] })
    expect(posts()).toHaveLength(0)
    expect(slack.applications.size).toBe(0)
  })

  it('refuses bad input with an error naming the argument, before anything is sent', async () => {
    const { gate: g } = await gate()
    const cases: [string, JsonObject, RegExp][] = [
      ['post', post({ channel: '#ops' }), /args\.channel must be a Slack channel id such as "C0123456789" \(got "#ops"\)/],
      ['post', { channel: 'C0OPS' }, /args\.text is required \(or blocks or attachments\)/],
      ['post', post({ metadata: { event_type: 'x', event_payload: {} } }), /args\.metadata is Interlock's own/],
      ['post', post({ as_user: true }), /unknown post argument: args\.as_user/],
      ['post', post({ thread_ts: 'yesterday' }), /args\.thread_ts must be a message timestamp/],
      ['post', post({ unfurl_links: 'yes' }), /args\.unfurl_links must be true or false/],
      ['delete', { channel: 'C0OPS' }, /args\.ts must be the message timestamp/],
      ['update', post(), /a Slack target's actions are "post" and "delete" \(got "update"\)/],
    ]
    for (const [action, args, message] of cases) {
      await expect(g.submit(input(args, undefined, action)), JSON.stringify(args)).rejects.toThrow(InputError)
      await expect(g.submit(input(args, undefined, action))).rejects.toThrow(message)
      await expect(target().capture(action, args)).rejects.toThrow(message)
      expect((await fault(target().apply(toEffect(input(args, undefined, action)), first))).kind).toBe('refused')
    }
    expect(slack.requests).toHaveLength(0)
  })

  it("Slack's ok:false errors are refused (FAILED) with the error code", async () => {
    const { gate: g, store } = await gate()
    const missing = await g.submit(input(post({ channel: 'C0NOWHERE' })))
    const outside = await g.submit(input(post({ channel: 'C0OUTSIDE' })))
    expect(missing).toMatchObject({ status: 'failed', reason: expect.stringMatching(/Slack refused: channel_not_found$/) })
    expect(outside).toMatchObject({ status: 'failed', reason: expect.stringMatching(/Slack refused: not_in_channel$/) })

    const wrong = `${TOKEN}-revoked`
    const f = await fault(target({ token: wrong }).apply(toEffect(input(post())), first))
    expect(f).toMatchObject({ kind: 'refused', context: { status: 200, error: 'invalid_auth' } })
    expect(f.message).not.toContain(wrong)
    expect(slack.applications.size).toBe(0)
    expect(await journalText(store)).not.toContain(TOKEN)
  })

  it('HTTP 429 with Retry-After: retried after that many seconds, posted once', async () => {
    const { gate: g, slept } = await gate()
    slack.rateLimit(1, 7)
    const out = await g.submit(input(post()))
    expect(out.status).toBe('committed')
    expect(slept).toEqual([7000])
    expect(slack.count(out.effectId)).toBe(1)
    expect(posts()).toHaveLength(2)

    const f = await fault((slack.rateLimit(1, 3), target().apply(toEffect(input(post({ text: 'again' }))), first)))
    expect(f).toMatchObject({ kind: 'retry-later', retryAfterMs: 3000 })
  })

  it('ok:false ratelimited is retried; internal_error after posting is AMBIGUOUS and not resent', async () => {
    const { gate: g } = await gate()
    slack.failNextPost('ratelimited')
    const limited = await g.submit(input(post()))
    expect(limited.status).toBe('committed')
    expect(slack.count(limited.effectId)).toBe(1)

    slack.failNextPost('internal_error', true)
    const maybe = await g.submit(input(post({ text: 'second' })))
    expect(maybe).toMatchObject({ status: 'ambiguous', reason: expect.stringContaining('internal_error') })
    expect(slack.count(maybe.effectId)).toBe(1)
    expect(posts()).toHaveLength(3)
  })
})

describe('Slack after a crash in flight (tier 3: AMBIGUOUS, never resent)', () => {
  const modes: FaultMode[] = ['reset-before-apply', 'apply-then-drop', 'reset-after-apply', '5xx', 'hang']
  const landed = (mode: FaultMode) => (mode === 'apply-then-drop' || mode === 'reset-after-apply' ? 1 : 0)

  for (const mode of modes) {
    it(`${mode}: the gate settles AMBIGUOUS at once; a crash mid-request recovers as AMBIGUOUS; at most one message`, async () => {
      const h = await gate({ retry: { maxAttempts: 5 } }, { timeoutMs: 300 })
      slack.fault({ mode, route: 'POST /api/chat.postMessage' })
      const out = await h.gate.submit(input(post()))
      expect(out).toMatchObject({ status: 'ambiguous', reason: expect.stringMatching(/^outcome unknown: /) })
      expect(slack.count(out.effectId)).toBe(landed(mode))
      expect(posts()).toHaveLength(1)

      const e = toEffect(input(post({ text: 'Refund of 12.50 USD sent, again.' })))
      await journalDispatched(h.store, e, 3)
      slack.fault({ mode, route: 'POST /api/chat.postMessage' })
      expect((await fault(target({ timeoutMs: 300 }).apply(e, first))).kind).toBe('unknown')

      const next = await h.restart()
      const report = await next.gate.recover()
      expect(report.effects).toMatchObject([
        { effectId: out.effectId, found: 'AMBIGUOUS', action: 'waiting' },
        { effectId: e.id, found: 'DISPATCHED', action: 'marked-ambiguous', outcome: { status: 'ambiguous' } },
      ])
      expect(slack.count(e.id)).toBe(landed(mode))
      expect(posts()).toHaveLength(2)
    })
  }

  it('a refused connection is not-sent: the gate may post again', async () => {
    const closed = http.createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as AddressInfo).port
    await new Promise((r) => closed.close(r))
    const f = await fault(target({ baseUrl: `http://127.0.0.1:${port}` }).apply(toEffect(input(post())), first))
    expect(f.kind).toBe('not-sent')
  })
})

describe('Slack compensation', () => {
  it('a post is undone by chat.delete with the channel and ts from its receipt, through the gate', async () => {
    const { gate: g } = await gate()
    const out = await g.submit(input(post()))
    if (out.status !== 'committed') throw new Error(`not committed: ${JSON.stringify(out)}`)
    const t = g.target('chat')
    const comp = await t.compensation!(toEffect(input(post())), out.receipt)
    expect(comp).toEqual({ action: 'delete', args: { channel: 'C0OPS', ts: out.receipt.ts } })

    const undo = await g.submit({ thread: 'order-7', target: 'chat', action: comp.action, args: comp.args, premises: comp.premises })
    expect(undo).toMatchObject({ status: 'committed', receipt: { channel: 'C0OPS', ts: out.receipt.ts, deleted: true } })
    expect(slack.messages.size).toBe(0)
    expect(slack.deleted.map((m) => m.effectId)).toEqual([out.effectId])

    // Deleting what is already gone is Slack's refusal, not a second delete.
    const again = await g.submit({ thread: 'order-7', target: 'chat', action: 'delete', args: comp.args, key: 'again' })
    expect(again).toMatchObject({ status: 'failed', reason: expect.stringMatching(/message_not_found$/) })
    expect(() => t.compensation!(toEffect({ thread: 't', target: 'chat', action: 'delete', args: comp.args }), {})).toThrow(/cannot be restored/)
  })
})

describe('Slack target from interlock.toml', () => {
  it('is configured by name with the token from the environment, and built by the registry', () => {
    const config = parseConfig(`[targets.chat]\ntype = "slack"\ntoken = "\${SLACK_TOKEN}"\nbase_url = "${slack.url}"\nconnect_timeout_ms = 500\n`, {
      file: '/tmp/interlock.toml',
      env: { SLACK_TOKEN: TOKEN },
    })
    expect(config.targets.chat).toEqual({ type: 'slack', token: TOKEN, baseUrl: slack.url, timeoutMs: 10000, connectTimeoutMs: 500 })
    expect(config.secrets).toEqual([TOKEN])
    const t = createTarget('chat', config.targets.chat!, { secrets: config.secrets })
    targets.push(t as SlackMessageTarget)
    expect(t).toBeInstanceOf(SlackMessageTarget)
    expect(t.tier).toBe(3)
    expect(parseConfig('[targets.chat]\ntype = "slack"\ntoken = "${T}"\n', { file: '/tmp/i.toml', env: { T: TOKEN } }).targets.chat).toMatchObject({
      baseUrl: 'https://slack.com',
    })
    expect(() => parseConfig('[targets.chat]\ntype = "slack"\ntoken = "xoxb-literal"\n', { file: '/tmp/i.toml', env: {} })).toThrow(/is invalid/)
  })
})
