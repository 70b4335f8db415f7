/**
 * `interlock console` in a real browser (Debian's chromium driven by
 * playwright-core), the built binary against a real SQLite and a real
 * PostgreSQL outbox with `interlock relay` running: operator alice, in one
 * browser context with her console, watches the status page as a held
 * refund appears without a reload and releases it as one of two operators;
 * operator bob, in another context with his console, completes the quorum
 * from the keyboard; the relay sends it; both pages show COMMITTED. A forged
 * link, a page of another origin posting to the console with alice's
 * session, and a console without a key are refused. Screenshots of the main
 * pages go to test-artifacts/console/.
 *
 * Chromium is not optional here: without it the file fails, naming what to
 * install (`.ci/run` installs it).
 */
import { existsSync, mkdirSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStore } from '../../src/core/stores/open.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { consoleWorld, startConsoleProc, type ConsoleProc, type ConsoleWorld } from '../helpers/console-world.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'
import { relayReady, startRelayProc, type RelayProc } from '../helpers/relay-procs.js'

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const ARTIFACTS = join(repo, 'test-artifacts', 'console')
const CHROMIUM = '/usr/bin/chromium'
const VIEWPORT = { width: 1280, height: 800 }
/** Long enough for a relay on a busy two-core machine; every wait ends as soon as its condition holds. */
const WAIT_MS = 20_000

let browser: Browser | undefined
let service: HttpService | undefined
let evil: { origin: string; close(): Promise<void> } | undefined
let db: TestDatabase | undefined

beforeAll(async () => {
  assertCliBuilt()
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `this browser test needs Debian's chromium at ${CHROMIUM}, which is not installed: apt-get install -y chromium (.ci/run installs it when absent)` +
        (process.env.CI === 'true' ? '. CI=true: the browser test must run, not be skipped.' : '.'),
    )
  }
  mkdirSync(ARTIFACTS, { recursive: true })
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Without these, chromium tries hosts it cannot reach (TOOLCHAIN.md); --no-sandbox as the tests may run as root.
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-first-run'],
  })
  service = await startHttpService()
  evil = await foreignSite()
})

afterAll(async () => {
  await browser?.close()
  await service?.close()
  await evil?.close()
  await db?.drop()
})

async function sqliteStore(): Promise<{ kind: 'sqlite' }> {
  return { kind: 'sqlite' }
}

async function postgresStore(): Promise<{ kind: 'postgres'; url: string; schema: string }> {
  db ??= await createTestDatabase()
  return { kind: 'postgres', url: db.url, schema: 'console_e2e' }
}

describe.each([
  ['sqlite', sqliteStore],
  ['postgres', postgresStore],
] as const)('the console on %s', (kind, store) => {
  it('alice sees a held refund appear live and releases it as one of two; bob completes the quorum; the relay sends it; the page shows COMMITTED; forgeries and a key-less console are refused', async () => {
    const w = await consoleWorld(await store(), `${service!.url}/idempotent`)
    const procs: { relay?: RelayProc; consoles: ConsoleProc[] } = { consoles: [] }
    const contexts: BrowserContext[] = []
    try {
      procs.relay = startRelayProc('relay-1', [], w.dir, w.env)
      const [alice, bob, readOnly] = await Promise.all([
        startConsoleProc(['--key', w.keyFiles.alice], w.dir, w.env),
        startConsoleProc(['--key', w.keyFiles.bob], w.dir, w.env),
        startConsoleProc([], w.dir, w.env),
      ])
      procs.consoles.push(alice, bob, readOnly)
      await relayReady(procs.relay)

      // Alice opens her link: the token is spent, the address bar keeps no token.
      const a = await page(contexts)
      await a.goto(alice.url)
      expect(a.url()).toBe(`${alice.origin}/`)
      await a.getByText('Signing as operator alice').waitFor()
      await a.locator('#live-status', { hasText: 'Live updates: on.' }).waitFor({ timeout: WAIT_MS })
      await a.evaluate('window.__notReloaded = true')

      // An agent's refund above 500.00: the relay holds it for two operators.
      const submitted = await interlock(['outbox', 'submit', '--target', 'refunds', '--action', 'refund', '--arg', 'amount=900.00', '--arg', 'charge=ch_1', '--arg', 'currency=usd', '--json'], { cwd: w.dir, env: w.env })
      expect(submitted.code, submitted.stderr).toBe(0)
      const id = JSON.parse(submitted.stdout).effectId as string
      // It shows in the HELD table once the relay has held it, without a reload.
      const link = a.locator('section[aria-labelledby="held"]').getByRole('link', { name: `${id.slice(0, 12)}…` })
      await link.waitFor({ timeout: WAIT_MS })
      expect(await a.evaluate('window.__notReloaded')).toBe(true)
      // The counts are read apart from the lists (as `outbox status` reads them): the page catches up on the next change if they raced.
      await a.locator('td[data-state="HELD"]', { hasText: /^1$/ }).waitFor({ timeout: WAIT_MS })
      await fits(a)
      await a.screenshot({ path: join(ARTIFACTS, `${kind}-1-status-held.png`) })

      await link.click()
      await a.getByRole('heading', { name: /Held for a release/ }).waitFor()
      await a.getByText('Releases: 0 of 2 operators').waitFor()
      await a.getByText(`interlock outbox release ${id} --key ${w.keyFiles.alice}`).first().waitFor()
      await fits(a)
      await a.screenshot({ path: join(ARTIFACTS, `${kind}-2-effect-held.png`), fullPage: true })
      await a.getByRole('button', { name: 'Sign the release as alice' }).click()
      await a.getByText('Signed: 1 of 2 operators have released it; it stays HELD.').waitFor()
      await a.getByText('Releases: 1 of 2 operators').waitFor()
      await a.getByText('operator alice (release)').waitFor()
      await a.screenshot({ path: join(ARTIFACTS, `${kind}-3-released-1-of-2.png`), fullPage: true })
      await a.evaluate('window.__notReloaded = true')

      // A page of another origin (same site: cookies go along) posts to alice's console in her browser: refused by Origin.
      const attack = await a.context().newPage()
      await attack.goto(`${evil!.origin}/?to=${encodeURIComponent(`${alice.origin}/effects/${id}/release`)}`)
      await attack.getByText('Invalid Origin').waitFor({ timeout: WAIT_MS })
      expect(attack.url()).toBe(`${alice.origin}/effects/${id}/release`)
      await attack.screenshot({ path: join(ARTIFACTS, `${kind}-7-refused-origin.png`) })
      await attack.close()

      // A forged link opens nothing.
      const f = await page(contexts)
      const forged = await f.goto(`${alice.origin}/?token=${'x'.repeat(43)}`)
      expect(forged?.status()).toBe(403)
      await f.getByText('this link\'s token is not the one the console printed').waitFor()
      const none = await f.goto(`${alice.origin}/effects/${id}`)
      expect(none?.status()).toBe(401)

      // The console started without --key shows the effect, offers no button, and refuses a release naming --key.
      const r = await page(contexts)
      await r.goto(readOnly.url)
      await r.goto(`${readOnly.origin}/effects/${id}`)
      await r.getByText('This console is read-only: it was started without --key').waitFor()
      expect(await r.getByRole('button').count()).toBe(0)
      await r.screenshot({ path: join(ARTIFACTS, `${kind}-6-read-only.png`), fullPage: true })
      const refused = (await r.evaluate(`(async () => {
        const csrf = document.querySelector('meta[name="csrf"]').content
        const res = await fetch(location.pathname + '/release', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'csrf=' + encodeURIComponent(csrf) })
        return [res.status, await res.text()]
      })()`)) as [number, string]
      expect(refused[0]).toBe(403)
      expect(refused[1]).toContain('started without --key')

      const states = await statesOf(w, id)
      expect(states).toEqual(['PROPOSED', 'HELD', 'HELD'])

      // Bob, in his own browser context and console, from the keyboard: the Held list, the effect, his release.
      const b = await page(contexts)
      await b.goto(bob.url)
      await b.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Held', exact: true }).focus()
      await b.keyboard.press('Enter')
      await b.getByRole('link', { name: `${id.slice(0, 12)}…` }).waitFor()
      await fits(b)
      await b.screenshot({ path: join(ARTIFACTS, `${kind}-4-held-list.png`) })
      await b.getByRole('link', { name: `${id.slice(0, 12)}…` }).focus()
      await b.keyboard.press('Enter')
      const release = b.getByRole('button', { name: 'Sign the release as bob' })
      await release.waitFor()
      await release.focus()
      await b.keyboard.press('Enter')
      await b.getByText('Released: quorum met (alice, bob); the effect is AUTHORIZED and goes on to dispatch.').waitFor()

      // The relay sends it: both pages turn COMMITTED by themselves.
      for (const p of [a, b]) await p.locator('h1 .state', { hasText: 'COMMITTED' }).waitFor({ timeout: WAIT_MS })
      expect(await a.evaluate('window.__notReloaded')).toBe(true)
      // The COMMITTED record, written by the relay, shown under the relay's seal of that commit.
      await a.locator('li.record').last().getByText(/relay relay-1 \(seal \d+\)/).waitFor()
      await fits(a)
      await a.screenshot({ path: join(ARTIFACTS, `${kind}-5-committed.png`), fullPage: true })
      expect(service!.counts().idempotent[id]).toBe(1)

      const verify = await interlock(['outbox', 'verify', '--json'], { cwd: w.dir, env: w.env })
      expect(verify.code, verify.stdout + verify.stderr).toBe(0)
      expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, signatures: { valid: 4, invalid: 0 } })
    } finally {
      for (const c of contexts) await c.close()
      const ended = await Promise.all(procs.consoles.map((c) => c.stop()))
      expect(ended.map((e) => e.code)).toEqual(procs.consoles.map(() => 0))
      if (procs.relay) {
        procs.relay.child.kill('SIGTERM')
        await procs.relay.exited
      }
    }
  })
})

async function page(contexts: BrowserContext[]): Promise<Page> {
  const context = await browser!.newContext({ viewport: VIEWPORT })
  contexts.push(context)
  return context.newPage()
}

/** Fits a 1280×800 window: nothing scrolls sideways. */
async function fits(p: Page): Promise<void> {
  expect(await p.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(VIEWPORT.width)
}

async function statesOf(w: ConsoleWorld, id: string): Promise<string[]> {
  const s = await openStore(w.config.store)
  try {
    return (await s.history(id)).map((r) => r.state)
  } finally {
    await s.close()
  }
}

/** Another origin on this machine (127.0.0.1, another port: the same site, so the browser sends the console's cookie along) whose page posts a release form to `?to=`. */
async function foreignSite(): Promise<{ origin: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const to = new URL(req.url ?? '/', 'http://x').searchParams.get('to') ?? ''
    const action = to.replace(/[&<>"']/g, '')
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(`<!doctype html><title>Win a prize</title><form method="post" action="${action}"><input type="hidden" name="csrf" value="guessed"></form><script>document.forms[0].submit()</script>`)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}
