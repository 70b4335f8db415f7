/**
 * Payloads reach targets as the agent wrote them, code unit for code unit:
 * arbitrary Unicode (decomposed accents, characters NFC would change,
 * astral characters, control characters, lone surrogates where JSON carries
 * them) is submitted to the http, S3, SendGrid and Slack targets on every
 * send path, on each store, and compared with what each service received,
 * what the journal returns, and what an export holds:
 *
 * - inline: the gate's first attempt (args from memory);
 * - relay: an outbox journals it, a relay sends it (args from the journal);
 * - recovery: journaled as far as a killed process left it (DISPATCHED for
 *   tiers 1 and 2, AUTHORIZED for tier 3), then a fresh gate recovers it;
 * - redispatch: a tier-3 effect left AMBIGUOUS, resolved by an operator's
 *   signed `redispatch` and sent again;
 * - then `outbox export` and `outbox verify` (store and file).
 *
 * NFC is applied to the effect id only: a test below checks that composed
 * and decomposed text is still one effect.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { canonicalJson, type JsonObject } from '../../src/core/canonical-json.js'
import { systemClock } from '../../src/core/clock.js'
import type { OperatorConfig } from '../../src/core/config/types.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { toEffect, type EffectInput, type Tier } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { proposal } from '../../src/core/gate-context.js'
import { exportJournal, readExport } from '../../src/core/outbox/export-file.js'
import { Outbox } from '../../src/core/outbox/outbox.js'
import { redispatch } from '../../src/core/outbox/redispatch.js'
import { resolveEffect } from '../../src/core/outbox/resolve.js'
import { verifyExport, verifyStore } from '../../src/core/outbox/verify-sources.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { Relay } from '../../src/core/relay/relay.js'
import { relaySigner } from '../../src/core/relay/relay-signer.js'
import { signingStore } from '../../src/core/stores/signing-store.js'
import type { AppendRequest, Store } from '../../src/core/stores/store.js'
import { HttpTarget } from '../../src/core/targets/http/http-target.js'
import { S3Target } from '../../src/core/targets/s3/index.js'
import { SendgridMailTarget } from '../../src/core/targets/sendgrid/index.js'
import { SlackMessageTarget } from '../../src/core/targets/slack/index.js'
import type { EffectTarget } from '../../src/core/targets/target.js'
import { S3Emulator } from '../emulators/s3.js'
import { SendgridEmulator } from '../emulators/sendgrid.js'
import { SlackEmulator } from '../emulators/slack.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox, type OutboxHarness } from '../helpers/outbox-stores.js'

const RUNS = 30
const operatorKey = generateKeyPair('operator', 'alice')
const relayKey = generateKeyPair('relay', 'bytes-relay')
const operators: OperatorConfig[] = [{ name: 'alice', publicKey: operatorKey.publicKey }]
// The policy in force (none holds anything) judges the outbox's own authorizations, which carry no relay signature.
const trust = { operators, relays: [{ name: 'bytes-relay', publicKey: relayKey.publicKey }], policy: new RulesPolicy([]) }
/** Gates sign what they journal with the relay's key, as openInterlock's gate does when the config has one: verify then checks every record. */
const signing = { key: relayKey, id: 'bytes-relay' }

/** Every string shown code unit by code unit (non-ASCII as \uXXXX), keys sorted: an exact comparison with a readable diff. */
function exact(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(exact).join(',')}]`
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>
    return `{${Object.keys(o).sort().map((k) => `${units(k)}:${exact(o[k])}`).join(',')}}`
  }
  return typeof v === 'string' ? units(v) : JSON.stringify(v)
}
function units(s: string): string {
  let out = '"'
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    out += c >= 0x20 && c < 0x7f && c !== 0x22 && c !== 0x5c ? s[i] : `\\u${c.toString(16).padStart(4, '0')}`
  }
  return `${out}"`
}

// Pieces NFC would change or that JSON, UTF-8 or a database could mangle.
const PIECES = [
  'Cafe\u0301', // decomposed é
  'A\u030a', // decomposed Å
  '\u212b', // ANGSTROM SIGN: NFC makes it U+00C5
  '\u2126', // OHM SIGN: NFC makes it U+03A9
  'q\u0307\u0323', // combining marks out of canonical order: NFC reorders them
  '\u1100\u1161', // Hangul jamo: NFC composes them
  '\ufb01', // a compatibility ligature (NFC keeps it; NFKC would not)
  '\u00e9', // composed é
  '\u{1f600}', // astral
  '\u{1f469}\u200d\u{1f4bb}', // a ZWJ sequence
  '\u0000\u0007\u001f\u007f', // control characters
  '\t\r\n',
  '\u2028\u2029', // separators JavaScript once could not put in a string literal
  '\ufeff', // a byte-order mark inside the text
  '"\\/',
]
const LONE = ['\ud800', '\udbff', '\udc00', '\udfff', '\ud83d']

/** Well-formed text: what a body of UTF-8 bytes (S3) can carry. */
const wellFormed = fc.array(fc.oneof(fc.constantFrom(...PIECES), fc.string({ unit: 'binary', maxLength: 8 }), fc.string({ unit: 'grapheme', maxLength: 4 })), { maxLength: 5 }).map((a) => a.join(''))
/** Any string at all, lone surrogates included: what JSON (and so the journal and JSON bodies) carries. */
const anyString = fc.array(fc.oneof(fc.constantFrom(...PIECES), fc.constantFrom(...LONE), fc.string({ unit: 'binary', maxLength: 8 })), { maxLength: 5 }).map((a) => a.join(''))

interface Payload {
  text: string
  raw: string
  key: string
}
const payload: fc.Arbitrary<Payload> = fc.record({ text: wellFormed, raw: anyString, key: anyString })

type TargetName = 'hook' | 'files' | 'mail' | 'chat'
const TIER: Record<TargetName, Tier> = { hook: 1, files: 2, mail: 3, chat: 3 }

/** The effect each target gets for a payload, on one path. */
function inputFor(target: TargetName, p: Payload, thread: string): EffectInput {
  switch (target) {
    case 'hook':
      return { thread, target, action: 'notify', args: { text: p.raw, nested: { [p.key]: [p.raw, p.text] } }, premises: { seen: p.raw } }
    case 'files':
      return { thread, target, action: 'put', args: { key: `bytes/${thread}.txt`, body: p.text, content_type: 'text/plain; charset=utf-8' } }
    case 'mail':
      return { thread, target, action: 'send', args: { from: { email: 'agent@example.org', name: p.raw }, to: 'ops@example.org', subject: `S${p.raw}`, text: `T${p.text}`, custom_args: { note: p.raw } } }
    case 'chat':
      return { thread, target, action: 'post', args: { channel: 'C0OPS', text: `T${p.raw}` } }
  }
}

/** A service for the http target that keeps every request body's bytes, per effect id. */
async function startRecorder(): Promise<{ url: string; bodies: Map<string, Buffer[]>; close(): Promise<void> }> {
  const bodies = new Map<string, Buffer[]>()
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const raw = Buffer.concat(chunks)
      const id = (JSON.parse(raw.toString('utf8')) as { effect_id: string }).effect_id
      bodies.set(id, [...(bodies.get(id) ?? []), raw])
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, close: () => new Promise((r) => server.close(() => r())) }
}

let recorder: Awaited<ReturnType<typeof startRecorder>>
let s3: S3Emulator
let sendgrid: SendgridEmulator
let slack: SlackEmulator

beforeAll(async () => {
  recorder = await startRecorder()
  s3 = await new S3Emulator().start()
  s3.createBucket('docs')
  sendgrid = await new SendgridEmulator().start()
  slack = await new SlackEmulator().start()
  slack.seedChannel({ id: 'C0OPS', name: 'ops' })
})
afterAll(async () => {
  await recorder?.close()
  await s3?.close()
  await sendgrid?.close()
  await slack?.close()
  await dropOutboxDatabase()
})

function targets(): EffectTarget[] {
  const timeouts = { timeoutMs: 5000, connectTimeoutMs: 2000 }
  return [
    new HttpTarget('hook', { tier: 1, url: `${recorder.url}/hook`, ...timeouts }),
    new S3Target('files', { bucket: 'docs', region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, endpoint: s3.url, pathStyle: true, ...timeouts }),
    new SendgridMailTarget('mail', { apiKey: sendgrid.apiKey, baseUrl: sendgrid.url, ...timeouts }),
    new SlackMessageTarget('chat', { token: slack.token, baseUrl: slack.url, ...timeouts }),
  ]
}

/** Problems found, each naming the target, the path and what differed; all are collected, so one run shows every path that alters bytes. */
type Problems = string[]
function same(problems: Problems, label: string, got: unknown, want: unknown): void {
  const g = typeof got === 'string' && typeof want === 'string' ? got : exact(got)
  const w = typeof got === 'string' && typeof want === 'string' ? want : exact(want)
  if (g !== w) problems.push(`${label}: got ${g.length > 300 ? `${g.slice(0, 300)}…` : g}, submitted ${w.length > 300 ? `${w.slice(0, 300)}…` : w}`)
}

/** What the service behind `input.target` received for the effect, each time it was sent, against what was submitted. */
function checkReceived(problems: Problems, input: EffectInput, id: string, path: string): void {
  const args = input.args as Record<string, unknown> & JsonObject
  const label = `${input.target} via ${path}`
  switch (input.target as TargetName) {
    case 'hook': {
      const bodies = recorder.bodies.get(id) ?? []
      if (bodies.length === 0) problems.push(`${label}: nothing received`)
      for (const raw of bodies) {
        same(problems, `${label}: request body's args`, (JSON.parse(raw.toString('utf8')) as { args: unknown }).args, args)
        same(problems, `${label}: request body's bytes`, raw.toString('hex'), Buffer.from(canonicalJson({ action: input.action, args: input.args, effect_id: id })).toString('hex'))
      }
      return
    }
    case 'files': {
      const bytes = Buffer.from(args.body as string, 'utf8')
      const object = s3.current('docs', args.key as string)
      if (!object) return void problems.push(`${label}: no object`)
      same(problems, `${label}: object bytes`, object.body.toString('hex'), bytes.toString('hex'))
      same(problems, `${label}: ETag`, object.etag, `"${createHash('md5').update(bytes).digest('hex')}"`)
      return
    }
    case 'mail': {
      const sent = sendgrid.sentFor(id)
      if (sent.length === 0) problems.push(`${label}: nothing sent`)
      for (const m of sent) {
        const b = m.body as { from: { name: string }; subject: string; content: { value: string }[]; custom_args: Record<string, string> }
        same(problems, `${label}: from.name, subject, text, custom_args`, [b.from.name, b.subject, b.content[0]!.value, b.custom_args.note], [
          (args.from as JsonObject).name,
          args.subject,
          args.text,
          (args.custom_args as JsonObject).note,
        ])
      }
      return
    }
    case 'chat': {
      const posts = slack.postsFor(id)
      if (posts.length === 0) problems.push(`${label}: nothing posted`)
      for (const m of posts) same(problems, `${label}: text`, [m.body.text], [args.text])
      return
    }
  }
}

/** What the journal gives back for the effect: the args and premises as submitted. */
async function checkJournaled(problems: Problems, store: Store, input: EffectInput, id: string, path: string): Promise<void> {
  const label = `${input.target} via ${path}`
  const snap = await store.get(id)
  if (snap?.state !== 'COMMITTED') return void problems.push(`${label}: ${snap?.state ?? 'not journaled'}, not COMMITTED (${JSON.stringify(snap?.detail)})`)
  same(problems, `${label}: the effect read back`, { args: snap.effect.args, premises: snap.effect.premises }, { args: input.args, premises: input.premises ?? {} })
  const proposed = (await store.history(id))[0]!.data.effect as JsonObject
  same(problems, `${label}: the PROPOSED record`, proposed.args, input.args)
}

/** Journals the effect as a process killed right after `to` leaves it (one holding the relay's key: each record signed). */
async function leave(store: Store, input: EffectInput, tier: Tier, to: 'AUTHORIZED' | 'DISPATCHED' | 'AMBIGUOUS'): Promise<string> {
  const effect = toEffect(input)
  const steps: AppendRequest[] = [
    { effectId: effect.id, from: null, to: 'PROPOSED', data: proposal(effect, tier), effect, tier },
    { effectId: effect.id, from: 'PROPOSED', to: 'AUTHORIZED', data: {} },
  ]
  if (to !== 'AUTHORIZED') steps.push({ effectId: effect.id, from: 'AUTHORIZED', to: 'DISPATCHED', data: {} })
  if (to === 'AMBIGUOUS') steps.push({ effectId: effect.id, from: 'DISPATCHED', to: 'AMBIGUOUS', data: { reason: 'the connection dropped after the request was written' } })
  const signed = signingStore(store, relaySigner(signing.id, signing.key, () => new Date()))
  // One commit, each record signed to follow the one before it.
  const results = await signed.append(steps.map((step, i) => (i === 0 ? step : { ...step, chained: true })))
  expect(results.every((r) => r.ok)).toBe(true)
  return effect.id
}

const STORES: [string, () => Promise<OutboxHarness>][] = [
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
]

describe.each(STORES)('payload bytes on %s', (storeName, make) => {
  /** Inline, recovery and redispatch use `a`; the outbox and its relay use `b`. */
  let a: { h: OutboxHarness; store: Store; gate: Gate; targets: EffectTarget[] }
  let b: { h: OutboxHarness; store: Store; outbox: Outbox; relay: Relay; targets: EffectTarget[] }
  /** Every effect submitted, for the export's check. */
  const submitted = new Map<string, EffectInput>()

  beforeAll(async () => {
    const ha = await make()
    const storeA = await ha.open()
    const targetsA = targets()
    a = { h: ha, store: storeA, targets: targetsA, gate: new Gate({ store: storeA, targets: targetsA, retry: { maxAttempts: 2, backoffMs: 1 }, signing }) }
    const hb = await make()
    const storeB = await hb.open()
    const targetsB = targets()
    const relay = new Relay({ store: storeB, targets: targetsB, relayId: 'bytes-relay', key: relayKey, policy: new RulesPolicy([]), pollMs: 5, leaseMs: 10_000, retry: { maxAttempts: 2, backoffMs: 1 } })
    await relay.start()
    b = { h: hb, store: storeB, targets: targetsB, relay, outbox: new Outbox({ store: storeB, targets: targetsB, pollMs: 5 }) }
  })
  afterAll(async () => {
    await b?.relay.stop()
    await b?.outbox.close()
    for (const t of [...(a?.targets ?? []), ...(b?.targets ?? [])]) await t.close?.()
    await a?.store.close()
    await b?.store.close()
    await a?.h.dispose()
    await b?.h.dispose()
  })

  let run = 0
  it('every target receives, and the journal returns, exactly what was submitted, on every send path', async () => {
    const names: TargetName[] = ['hook', 'files', 'mail', 'chat']
    const property = fc.asyncProperty(payload, async (p) => {
      const n = ++run
      const thread = (path: string) => `bytes-${storeName}-${n}-${path}`
      const problems: Problems = []
      const check = async (store: Store, input: EffectInput, id: string, path: string) => {
        submitted.set(id, input)
        checkReceived(problems, input, id, path)
        await checkJournaled(problems, store, input, id, path)
      }

      // Inline: the first attempt sends the args the caller holds.
      for (const t of names) {
        const input = inputFor(t, p, thread('inline'))
        await check(a.store, input, (await a.gate.submit(input)).effectId, 'inline')
      }

      // Relay: the relay sends what the journal holds.
      for (const t of names) {
        const input = inputFor(t, p, thread('relay'))
        const handle = await b.outbox.submit(input)
        await handle.result()
        await check(b.store, input, handle.effectId, 'relay')
      }

      // Recovery: a fresh process on a fresh store handle, from the journal alone.
      const left: [EffectInput, string][] = []
      for (const t of names) {
        const input = inputFor(t, p, thread('recovery'))
        left.push([input, await leave(a.store, input, TIER[t], TIER[t] === 3 ? 'AUTHORIZED' : 'DISPATCHED')])
      }
      const reopened = await a.h.open()
      const fresh = targets()
      try {
        await new Gate({ store: reopened, targets: fresh, retry: { maxAttempts: 2, backoffMs: 1 }, signing }).recover()
      } finally {
        for (const t of fresh) await t.close?.()
        await reopened.close()
      }
      for (const [input, id] of left) await check(a.store, input, id, 'recovery')

      // Redispatch: an operator's signed resolution sends an AMBIGUOUS effect again.
      for (const t of names.filter((x) => TIER[x] === 3)) {
        const input = inputFor(t, p, thread('redispatch'))
        const id = await leave(a.store, input, 3, 'AMBIGUOUS')
        const resolved = await resolveEffect({ store: a.store, operators, policy: new RulesPolicy([]), key: operatorKey, clock: systemClock }, id, 'redispatch')
        await redispatch(a.store, new Map(a.targets.map((x) => [x.name, x])), resolved.snapshot, { maxAttempts: 2, backoffMs: 1 }, operatorKey)
        await check(a.store, input, id, 'redispatch')
      }

      // One object, whatever path wrote it: the same bytes, the same ETag.
      const etags = ['inline', 'relay', 'recovery'].map((path) => s3.current('docs', `bytes/${thread(path)}.txt`)?.etag)
      if (new Set(etags).size !== 1) problems.push(`files: the ETags of inline, relay and recovery differ: ${etags.join(' ')}`)
      expect(problems).toEqual([])
    })
    await fc.assert(property, {
      numRuns: RUNS,
      examples: [[{ text: 'Cafe\u0301 \u212b', raw: 'Cafe\u0301 \ud800', key: 'cle\u0301' }]],
    })
  }, 240_000)

  it('an export holds, and verify passes on, exactly what was submitted', async () => {
    expect(submitted.size).toBeGreaterThan(0)
    for (const [name, store] of [['inline', a.store], ['relay', b.store]] as const) {
      const report = await verifyStore(store, trust)
      expect(report.problems, name).toEqual([])
      const file = join(mkdtempSync(join(tmpdir(), 'interlock-bytes-')), `${name}.jsonl`)
      await exportJournal(store, file, new Date())
      const fromFile = await verifyExport(file, trust)
      expect(fromFile.problems, name).toEqual([])
      let proposals = 0
      for await (const r of readExport(file).records) {
        const input = r.state === 'PROPOSED' ? submitted.get(r.effectId) : undefined
        if (!input) continue
        proposals++
        const effect = r.data.effect as JsonObject
        expect(exact({ args: effect.args, premises: effect.premises }), `${name} export, effect ${r.effectId}`).toBe(exact({ args: input.args, premises: input.premises ?? {} }))
      }
      expect(proposals, name).toBeGreaterThan(0)
    }
  })

  it('text that has no UTF-8 bytes is refused at submit for an S3 body, the same on every store, and nothing is journaled', async () => {
    const input = inputFor('files', { text: 'ok \ud83d', raw: '', key: '' }, `bytes-${storeName}-lone`)
    await expect(a.gate.submit(input)).rejects.toMatchObject({ code: 'E_INPUT', message: expect.stringMatching(/put: body is not well-formed Unicode: a lone surrogate \(\\uD83D\) at index 3/) })
    await expect(b.outbox.submit(input)).rejects.toMatchObject({ code: 'E_INPUT' })
    expect(await a.store.get(toEffect(input).id)).toBeUndefined()
    expect(await b.store.get(toEffect(input).id)).toBeUndefined()
  })
})

describe('the effect id is the one place text is normalised', () => {
  it('composed and decomposed args are one effect: the second submit finds the first, and nothing is sent twice', async () => {
    const h = await sqliteOutbox()
    const store = await h.open()
    const [hook] = targets()
    const gate = new Gate({ store, targets: [hook!] })
    try {
      const first = await gate.submit({ thread: 'nfc-identity', target: 'hook', action: 'notify', args: { text: 'Cafe\u0301' } })
      const again = await gate.submit({ thread: 'nfc-identity', target: 'hook', action: 'notify', args: { text: 'Caf\u00e9' } })
      expect(again.effectId).toBe(first.effectId)
      expect(recorder.bodies.get(first.effectId)).toHaveLength(1)
      expect(exact((await store.get(first.effectId))!.effect.args)).toBe(exact({ text: 'Cafe\u0301' }))
    } finally {
      await gate.close()
      await store.close()
      await h.dispose()
    }
  })
})
