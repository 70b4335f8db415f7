/**
 * `interlock console`'s server in this process, on a real SQLite outbox:
 * the one-time link and its cookie, Host and Origin on every request, the
 * CSRF token of actions, read-only without a key, and actions that write
 * exactly what the CLI writes (`outbox verify` accepts them; a tampered
 * effects row is refused). The browser end to end is test/e2e/console-browser.test.ts.
 */
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { canonicalJson, type JsonObject } from '../../src/core/canonical-json.js'
import { systemClock } from '../../src/core/clock.js'
import type { KeyPair } from '../../src/core/crypto/keys.js'
import { effectDigest } from '../../src/core/crypto/digest.js'
import { recordSigner } from '../../src/core/crypto/record-signature.js'
import { toEffect } from '../../src/core/effect.js'
import { proposal } from '../../src/core/gate-context.js'
import { signingStore } from '../../src/core/stores/signing-store.js'
import { openInterlock, type Interlock } from '../../src/core/interlock.js'
import { verifyStore } from '../../src/core/outbox/verify-sources.js'
import { trustedRelayKeys } from '../../src/core/outbox/relay-keys.js'
import { startConsole, type RunningConsole } from '../../src/console/server.js'
import { escapeHtml } from '../../src/console/views/html.js'
import { consoleWorld, REFUNDS_TOKEN, send, signIn, type ConsoleWorld } from '../helpers/console-world.js'
import { sqliteOutbox } from '../helpers/outbox-stores.js'
import { forge, withData } from '../helpers/tamper.js'

const open: { console: RunningConsole; interlock: Interlock }[] = []

afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.console.close()
    await o.interlock.close()
  }
})

/** A console (as alice, or read-only) on a fresh SQLite outbox. */
async function consoleOn(key: 'alice' | 'bob' | null, w?: ConsoleWorld): Promise<{ w: ConsoleWorld; interlock: Interlock; console: RunningConsole; log: string[] }> {
  w ??= await consoleWorld({ kind: 'sqlite' }, 'http://127.0.0.1:9/refunds')
  const interlock = await openInterlock({ config: w.config })
  const log: string[] = []
  const k: KeyPair | undefined = key ? w.keys[key] : undefined
  const console = await startConsole(
    { interlock, key: k, relayKeys: trustedRelayKeys(w.config.relay, []), relayKeysNote: 'Relay signatures are checked against relay-1.', cli: { key: key ? `${key}.operator.key` : undefined }, clock: systemClock },
    { port: 0, pollMs: 50, log: (l) => log.push(l) },
  )
  open.push({ console, interlock })
  return { w, interlock, console, log }
}

async function held(interlock: Interlock, amount = '900.00'): Promise<string> {
  const out = await interlock.gate.submit({ thread: 'agent-1', target: 'refunds', action: 'refund', args: { amount, charge: 'ch_1' } })
  expect(out).toMatchObject({ status: 'held' })
  return out.effectId
}

/** An effect the target could not say about: AMBIGUOUS, journaled (and signed with the relay key) as a relay would. */
async function ambiguous(interlock: Interlock): Promise<string> {
  const effect = toEffect({ thread: 'agent-2', target: 'refunds', action: 'refund', args: { amount: '12.00', charge: 'ch_2' } })
  const signing = interlock.signing!
  const store = signingStore(interlock.store, recordSigner({ key: signing.key, id: signing.id, role: 'relay' }))
  await store.append([
    { effectId: effect.id, from: null, to: 'PROPOSED', data: proposal(effect, 1), effect, tier: 1 },
    { effectId: effect.id, from: 'PROPOSED', to: 'AUTHORIZED', data: {}, chained: true },
    { effectId: effect.id, from: 'AUTHORIZED', to: 'DISPATCHED', data: {}, chained: true },
    { effectId: effect.id, from: 'DISPATCHED', to: 'AMBIGUOUS', data: { reason: 'the connection dropped after the request was written' }, chained: true },
  ])
  return effect.id
}

/** The CSRF token of the session's forms, read from a page as the browser would. */
async function csrfOf(c: RunningConsole, cookie: string, path: string): Promise<string> {
  const page = await send(`${c.origin}${path}`, { headers: { cookie } })
  const m = /name="csrf" value="([^"]+)"/.exec(page.body)
  if (!m) throw new Error(`no form on ${path}:\n${page.body}`)
  return m[1]!
}

function post(c: RunningConsole, path: string, cookie: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return send(`${c.origin}${path}`, {
    method: 'POST',
    headers: { cookie, origin: c.origin, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  })
}

describe('the one-time link', () => {
  it('is spent by its first use, which sets an HttpOnly, SameSite=Strict cookie and leads to a page without the token', async () => {
    const { console: c, log } = await consoleOn('alice')
    expect(c.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}$/)
    const first = await send(c.url)
    expect(first.status).toBe(303)
    expect(first.headers.location).toBe('/')
    const cookie = [first.headers['set-cookie']].flat()[0]!
    expect(cookie).toMatch(/^interlock_console=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/$/)
    const page = await send(`${c.origin}/`, { headers: { cookie: cookie.split(';')[0]! } })
    expect(page.status).toBe(200)
    expect(page.body).toContain('Outbox status')
    expect(page.body).not.toContain('token=')

    const again = await send(c.url)
    expect(again.status).toBe(403)
    expect(again.body).toContain('this link was used already')
    expect(again.headers['set-cookie']).toBeUndefined()
    expect(log.join('\n')).not.toContain(new URL(c.url).searchParams.get('token')!)
  })

  it('refuses a forged token (403) and a request without a session (401), and keeps the real token unspent', async () => {
    const { console: c } = await consoleOn('alice')
    const forged = await send(`${c.origin}/?token=${'A'.repeat(43)}`)
    expect(forged.status).toBe(403)
    expect(forged.body).toContain('not the one the console printed')
    for (const path of ['/', '/effects', '/ambiguous', '/events', `/effects/${'0'.repeat(64)}`]) {
      const none = await send(`${c.origin}${path}`)
      expect(none.status, path).toBe(401)
      expect(none.body).toContain('Open the link `interlock console` printed')
    }
    const stranger = await send(`${c.origin}/`, { headers: { cookie: 'interlock_console=made-up' } })
    expect(stranger.status).toBe(401)
    expect((await send(c.url)).status).toBe(303)
  })
})

describe('the server', () => {
  it('listens on 127.0.0.1 only, and says so when the port asked for is taken', async () => {
    const { console: c, interlock, w } = await consoleOn('alice')
    expect(new URL(c.origin).hostname).toBe('127.0.0.1')
    const deps = { interlock, relayKeys: [], relayKeysNote: '', cli: {}, clock: systemClock }
    await expect(startConsole({ ...deps, key: w.keys.alice }, { port: c.port })).rejects.toMatchObject({ code: 'E_PORT_IN_USE', exitCode: 2, message: `port ${c.port} of 127.0.0.1 is in use` })
  })
})

describe('Host and Origin', () => {
  it('are checked on every request, with or without a session: a foreign name or origin is refused 403', async () => {
    const { console: c } = await consoleOn('alice')
    const port = new URL(c.origin).port
    // Before sign-in, a rebinding page cannot even spend the link.
    expect((await send(c.url, { headers: { host: `evil.example:${port}` } })).status).toBe(403)
    const cookie = await signIn(c.url)
    const cases: [Record<string, string>, number][] = [
      [{ host: `evil.example:${port}` }, 403],
      [{ host: '127.0.0.1' }, 403],
      [{ host: `127.0.0.1:${Number(port) + 1}` }, 403],
      [{ origin: 'http://evil.example' }, 403],
      [{ origin: `http://127.0.0.1:${Number(port) + 1}` }, 403],
      [{ origin: 'null' }, 403],
      [{ host: `localhost:${port}` }, 200],
      [{ origin: c.origin }, 200],
      [{ host: `localhost:${port}`, origin: `http://localhost:${port}` }, 200],
      [{}, 200],
    ]
    for (const [headers, status] of cases) {
      const r = await send(`${c.origin}/`, { headers: { cookie, ...headers } })
      expect(r.status, JSON.stringify(headers)).toBe(status)
      if (status === 403) expect(r.body).toMatch(/Invalid (Host|Origin)/)
    }
    // The assets too: nothing answers a foreign name.
    expect((await send(`${c.origin}/assets/console.js`, { headers: { host: `evil.example:${port}` } })).status).toBe(403)
    expect((await send(`${c.origin}/assets/console.js`)).status).toBe(200)
  })

  it('every answer forbids framing and other origins\' scripts', async () => {
    const { console: c } = await consoleOn('alice')
    const cookie = await signIn(c.url)
    const page = await send(`${c.origin}/`, { headers: { cookie } })
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'")
    expect(page.headers['content-security-policy']).toContain("script-src 'self'")
    expect(page.headers['x-frame-options']).toBe('DENY')
    expect(page.headers['cache-control']).toBe('no-store')
  })
})

describe('actions', () => {
  it('need the session\'s CSRF token and the console\'s origin: without them nothing is signed', async () => {
    const { console: c, interlock } = await consoleOn('alice')
    const id = await held(interlock)
    const cookie = await signIn(c.url)
    const csrf = await csrfOf(c, cookie, `/effects/${id}`)
    const path = `/effects/${id}/release`
    const refused = [
      await post(c, path, cookie, {}),
      await post(c, path, cookie, { csrf: 'x'.repeat(43) }),
      await post(c, path, cookie, { csrf }, { origin: 'http://evil.example' }),
      await post(c, path, 'interlock_console=made-up', { csrf }),
    ]
    expect(refused.map((r) => r.status)).toEqual([403, 403, 403, 401])
    expect(refused[0]!.body).toContain('CSRF token')
    expect((await interlock.store.history(id)).map((r) => r.state)).toEqual(['PROPOSED', 'HELD'])

    const ok = await post(c, path, cookie, { csrf })
    expect(ok.status).toBe(303)
    expect(ok.headers.location).toBe(`/effects/${id}`)
    expect((await interlock.store.history(id)).map((r) => r.state)).toEqual(['PROPOSED', 'HELD', 'HELD'])
  })

  it('without --key the console is read-only: it says so, shows no action buttons, and refuses an action naming --key', async () => {
    const { console: c, interlock, log } = await consoleOn(null)
    const id = await held(interlock)
    const amb = await ambiguous(interlock)
    const cookie = await signIn(c.url)
    const status = await send(`${c.origin}/`, { headers: { cookie } })
    expect(status.body).toContain('Read-only: started without <code>--key</code>')
    for (const effect of [id, amb]) {
      const page = await send(`${c.origin}/effects/${effect}`, { headers: { cookie } })
      expect(page.status).toBe(200)
      expect(page.body).toContain('This console is read-only: it was started without <code>--key</code>')
      expect(page.body).not.toMatch(/<button[^>]*>(Sign|Record|Send)/)
    }
    const keyless = await post(c, `/effects/${id}/release`, cookie, { csrf: await sessionCsrf(c, cookie) })
    expect(keyless.status).toBe(403)
    expect(keyless.body).toContain('started without --key')
    expect(log.join('\n')).toContain('read-only (no --key)')
    expect((await interlock.store.history(id)).map((r) => r.state)).toEqual(['PROPOSED', 'HELD'])
  })

  it('two operators release from two consoles: the CLI\'s signed statements, and `outbox verify` accepts the journal', async () => {
    const a = await consoleOn('alice')
    const b = await consoleOn('bob', a.w)
    const id = await held(a.interlock)
    for (const [o, who] of [[a, 'alice'], [b, 'bob']] as const) {
      const cookie = await signIn(o.console.url)
      const r = await post(o.console, `/effects/${id}/release`, cookie, { csrf: await csrfOf(o.console, cookie, `/effects/${id}`) })
      expect(r.status).toBe(303)
      const page = await send(`${o.console.origin}/effects/${id}`, { headers: { cookie } })
      expect(page.body).toContain(who === 'alice' ? 'Signed: 1 of 2 operators have released it; it stays HELD.' : 'Released: quorum met (alice, bob); the effect is AUTHORIZED')
      expect(page.body).toContain(`interlock outbox release ${id} --key ${who}.operator.key`)
    }
    const history = await a.interlock.store.history(id)
    expect(history.map((r) => r.state)).toEqual(['PROPOSED', 'HELD', 'HELD', 'HELD', 'AUTHORIZED'])
    const effect = (await a.interlock.store.get(id))!.effect
    expect(history[2]!.data.release).toMatchObject({ statement: { kind: 'release', effectId: id, operator: 'alice', rule: 'large-refunds', digest: effectDigest(effect) } })
    expect(history[4]!.data.signers).toEqual(['alice', 'bob'])
    const report = await verifyStore(a.interlock.store, { operators: a.w.config.operators, policy: a.interlock.policy, relays: trustedRelayKeys(a.w.config.relay, []) })
    expect(report.problems).toEqual([])
    expect(report.signatures).toEqual({ valid: 4, invalid: 0 })
  })

  it('deny and resolve sign what the CLI signs (a secret in the reason scrubbed first), and verify accepts them', async () => {
    const { console: c, interlock, w } = await consoleOn('alice')
    const denied = await held(interlock, '700.00')
    const amb = await ambiguous(interlock)
    const cookie = await signIn(c.url)
    const csrf = await csrfOf(c, cookie, `/effects/${denied}`)
    expect((await post(c, `/effects/${denied}/deny`, cookie, { csrf, reason: `refunded by hand; token ${REFUNDS_TOKEN}` })).status).toBe(303)
    const deniedPage = await send(`${c.origin}/effects/${denied}`, { headers: { cookie } })
    expect(deniedPage.body).toContain('Denied: the effect is REJECTED (signed by alice).')
    expect(deniedPage.body).toContain(escapeHtml(`interlock outbox release ${denied} --deny --reason 'refunded by hand; token ***' --key alice.operator.key`))
    expect(deniedPage.body).not.toContain(REFUNDS_TOKEN)
    const last = (await interlock.store.history(denied)).at(-1)!
    expect(last.state).toBe('REJECTED')
    expect(last.data.denial).toMatchObject({ statement: { kind: 'denial', operator: 'alice', reason: 'refunded by hand; token ***' } })

    const ambPage = await send(`${c.origin}/effects/${amb}`, { headers: { cookie } })
    expect(ambPage.body).toContain('the connection dropped after the request was written')
    for (const what of ['It happened → COMMITTED', 'It did not happen → FAILED', 'It did not happen; send it again now → DISPATCHED']) expect(ambPage.body).toContain(what)
    expect(ambPage.body).toContain(`interlock outbox resolve ${amb} --not-applied --key alice.operator.key`)
    expect((await post(c, `/effects/${amb}/resolve`, cookie, { csrf, how: 'applied' })).status).toBe(303)
    expect(await interlock.store.get(amb)).toMatchObject({ state: 'COMMITTED' })
    expect((await interlock.store.history(amb)).at(-1)!.data.resolution).toMatchObject({ statement: { kind: 'resolution', operator: 'alice', applied: true, redispatch: false } })

    const report = await verifyStore(interlock.store, { operators: w.config.operators, policy: interlock.policy, relays: trustedRelayKeys(w.config.relay, []) })
    expect(report.problems).toEqual([])
    expect(report.signatures).toEqual({ valid: 2, invalid: 0 })
  })

  it('a held effect whose effects row was edited behind its journal is refused for release, as the CLI refuses it: nothing signed', async () => {
    const { console: c, interlock, w } = await consoleOn('alice')
    const id = await held(interlock)
    const row = (await interlock.store.get(id))!
    const db = new Database(w.config.store.kind === 'sqlite' ? w.config.store.path : '')
    db.prepare('UPDATE effects SET effect = ? WHERE id = ?').run(canonicalJson({ ...row.effect, args: { amount: '99999.00', charge: 'ch_mallory' } } as unknown as JsonObject), id)
    db.close()
    const cookie = await signIn(c.url)
    const before = await send(`${c.origin}/effects/${id}`, { headers: { cookie } })
    expect(before.body).toContain('Its effects row disagrees with its journal (args)')
    // Shown as journaled, never as the row says.
    expect(before.body).toContain('900.00')
    expect(before.body).not.toContain('99999.00')
    expect((await post(c, `/effects/${id}/release`, cookie, { csrf: await csrfOf(c, cookie, `/effects/${id}`) })).status).toBe(303)
    const after = await send(`${c.origin}/effects/${id}`, { headers: { cookie } })
    expect(after.body).toContain('Your release: refused')
    expect(after.body).toContain(`effect ${id} cannot be released: its effects row disagrees with its journal (args). Nothing was signed by this action.`)
    expect(after.body).toContain(`interlock outbox release ${id} --key alice.operator.key`)
    expect((await interlock.store.history(id)).map((r) => r.state)).toEqual(['PROPOSED', 'HELD'])
  })
})

describe('pages', () => {
  it('the effect page shows the journal as a timeline: each record\'s state, signers, signature and chain link', async () => {
    const { console: c, interlock } = await consoleOn('alice')
    const id = await held(interlock)
    const cookie = await signIn(c.url)
    await post(c, `/effects/${id}/release`, cookie, { csrf: await csrfOf(c, cookie, `/effects/${id}`) })
    const page = (await send(`${c.origin}/effects/${id}`, { headers: { cookie } })).body
    const records = page.split('<li class="record').slice(1)
    expect(records).toHaveLength(3)
    expect(records[0]).toContain('PROPOSED')
    // The inline gate seals what it journals with the [relay] key, which the console checks as `outbox verify` does.
    for (const r of records.slice(0, 2)) {
      expect(r).toMatch(/<dt>Signed by<\/dt><dd>relay relay-1 \(seal \d+\)<\/dd>/)
      expect(r).toMatch(/Signature<\/dt><dd class="verdict verdict-valid">verifies/)
    }
    expect(records[0]).toContain('verifies (its hash; the first record of journal agent-1)')
    expect(records[2]).toContain('operator alice (release)')
    expect(records[2]).toMatch(/Signature<\/dt><dd class="verdict verdict-valid">verifies/)
    expect(records[2]).toContain('verifies (its hash, and its link to record 2 of journal agent-1)')
    expect(page).toContain('Releases: <strong>1 of 2</strong> operators')
    expect(page).toContain('Released by operator <strong>alice</strong>')
    expect(page).toContain('Held by rule <strong>large-refunds</strong>: args.amount 900.00 is above 500.00')
  })

  it('a release whose signature was forged (the chain recomputed over it) shows as not verifying, and counts for nothing', async () => {
    const { console: c, interlock, w } = await consoleOn('alice')
    const id = await held(interlock)
    const cookie = await signIn(c.url)
    await post(c, `/effects/${id}/release`, cookie, { csrf: await csrfOf(c, cookie, `/effects/${id}`) })
    const h = await sqliteOutbox(w.config.store.kind === 'sqlite' ? w.config.store.path : '')
    try {
      await forge(h, (rows) =>
        rows.map((r) => {
          if (r.effect_id !== id || !r.data.includes('"release":{')) return r
          return withData(r, (data) => {
            const sig = Buffer.from(data.release.signature, 'base64url')
            sig[10]! ^= 1
            return { ...data, release: { ...data.release, signature: sig.toString('base64url') } }
          })
        }),
      )
    } finally {
      await h.dispose()
    }
    const page = (await send(`${c.origin}/effects/${id}`, { headers: { cookie } })).body
    const forged = page.split('<li class="record').at(-1)!
    expect(forged).toContain('verdict verdict-invalid">does not verify')
    expect(forged).toContain('carries a release signature by alice that does not verify (forged or altered)')
    expect(page).toContain('Releases: <strong>0 of 2</strong> operators')
  })

  it('what an agent wrote into args is shown as text, never as markup', async () => {
    const { console: c, interlock } = await consoleOn('alice')
    const out = await interlock.gate.submit({ thread: 'agent-3', target: 'refunds', action: 'refund', args: { amount: '900.00', currency: '<b>usd</b>', charge: '<img src=x onerror=alert(1)>' } })
    const cookie = await signIn(c.url)
    const page = (await send(`${c.origin}/effects/${out.effectId}`, { headers: { cookie } })).body
    expect(page).not.toContain('<img src=x')
    expect(page).not.toContain('<b>usd</b>')
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;')
    expect(page).toContain('900.00 &lt;b&gt;usd&lt;/b&gt;')
  })

  it('the effects list filters as `outbox list` does, and says what is wrong with a filter', async () => {
    const { console: c, interlock } = await consoleOn('alice')
    const big = await held(interlock)
    await ambiguous(interlock)
    const cookie = await signIn(c.url)
    const heldOnly = (await send(`${c.origin}/effects?state=held`, { headers: { cookie } })).body
    expect(heldOnly).toContain(big.slice(0, 12))
    expect(heldOnly).not.toContain('AMBIGUOUS</span>')
    const none = (await send(`${c.origin}/effects?thread=nobody`, { headers: { cookie } })).body
    expect(none).toContain('No effects match.')
    const bad = await send(`${c.origin}/effects?since=yesterday`, { headers: { cookie } })
    expect(bad.status).toBe(400)
    expect(bad.body).toContain('since &quot;yesterday&quot; is not a date or time')
    const paged = (await send(`${c.origin}/effects?limit=1`, { headers: { cookie } })).body
    expect(paged).toContain('href="/effects?limit=1&amp;page=2"')
  })

  it('the event stream says when the outbox changed', async () => {
    const { console: c, interlock } = await consoleOn('alice')
    const cookie = await signIn(c.url)
    const events = await openEvents(c, cookie)
    try {
      const first = await events.next()
      await held(interlock)
      const second = await events.next()
      expect(second.version).not.toBe(first.version)
    } finally {
      events.close()
    }
  })
})

/** The CSRF token of a session whose console shows no form (read-only): taken from a console page's own markup. */
async function sessionCsrf(c: RunningConsole, cookie: string): Promise<string> {
  const page = await send(`${c.origin}/`, { headers: { cookie } })
  const m = /<meta name="csrf" content="([^"]+)">/.exec(page.body)
  if (!m) throw new Error('no session CSRF token on the page')
  return m[1]!
}

async function openEvents(c: RunningConsole, cookie: string): Promise<{ next(): Promise<{ version: string }>; close(): void }> {
  const { request } = await import('node:http')
  const u = new URL(`${c.origin}/events`)
  const queue: { version: string }[] = []
  const waiters: ((v: { version: string }) => void)[] = []
  let buffer = ''
  const req = request({ host: u.hostname, port: u.port, path: u.pathname, headers: { cookie }, agent: false })
  await new Promise<void>((resolve, reject) => {
    req.on('response', (res) => {
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-type']).toContain('text/event-stream')
      res.setEncoding('utf8').on('data', (d: string) => {
        buffer += d
        for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, at)
          buffer = buffer.slice(at + 2)
          const data = /^data: (.*)$/m.exec(block)?.[1]
          if (!/^event: change$/m.test(block) || !data) continue
          const v = JSON.parse(data) as { version: string }
          const w = waiters.shift()
          if (w) w(v)
          else queue.push(v)
        }
      })
      resolve()
    })
    req.on('error', reject)
    req.end()
  })
  return {
    next: () => new Promise((resolve) => (queue.length > 0 ? resolve(queue.shift()!) : waiters.push(resolve))),
    close: () => req.destroy(),
  }
}
