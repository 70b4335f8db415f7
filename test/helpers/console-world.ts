/**
 * A deployment for `interlock console` tests: an interlock.toml on SQLite or
 * PostgreSQL with a `refunds` target (tier 1, on the test's HTTP service), two
 * operators (alice, bob) and a rule that holds refunds above 500.00 for both
 * of them, key files for both and for the relay; plus the built console as a
 * child process, and HTTP requests with whatever Host, Origin and Cookie a
 * test wants to send.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { request as httpRequest } from 'node:http'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inject } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import type { InterlockConfig } from '../../src/core/config/types.js'
import { generateKeyPair, writeKeyFile, type KeyPair } from '../../src/core/crypto/keys.js'
import { install } from '../../src/core/stores/migrate.js'
import { assertCliBuilt } from './cli.js'

export const REFUNDS_TOKEN = 'sk_test_console_secret_9f2c'

export interface ConsoleWorld {
  dir: string
  configFile: string
  config: InterlockConfig
  keys: { alice: KeyPair; bob: KeyPair }
  keyFiles: { alice: string; bob: string }
  env: Record<string, string>
}

export async function consoleWorld(store: { kind: 'sqlite' } | { kind: 'postgres'; url: string; schema: string }, refundsUrl: string): Promise<ConsoleWorld> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-console-'))
  const keys = { alice: generateKeyPair('operator', 'alice'), bob: generateKeyPair('operator', 'bob') }
  const keyFiles = { alice: join(dir, 'alice.operator.key'), bob: join(dir, 'bob.operator.key') }
  writeKeyFile(keyFiles.alice, keys.alice)
  writeKeyFile(keyFiles.bob, keys.bob)
  writeKeyFile(join(dir, 'relay.key'), generateKeyPair('relay', 'relay-1'))
  const storeToml = store.kind === 'sqlite' ? 'path = "journal.db"' : `kind = "postgres"\nurl = "${store.url}"\nschema = "${store.schema}"`
  const text = `[store]
${storeToml}

[relay]
key = "relay.key"
id = "relay-1"
poll_ms = 100

[targets.refunds]
type = "http"
tier = 1
url = "${refundsUrl}"
timeout_ms = 3000

[targets.refunds.headers]
Authorization = "Bearer \${REFUNDS_TOKEN}"

[[operators]]
name = "alice"
public_key = "${keys.alice.publicKey}"

[[operators]]
name = "bob"
public_key = "${keys.bob.publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "refunds"
quorum = 2
when = [{ arg = "amount", above = "500.00" }]
`
  const configFile = join(dir, 'interlock.toml')
  writeFileSync(configFile, text)
  const env = { REFUNDS_TOKEN }
  const config = parseConfig(text, { file: configFile, env })
  await install(config.store)
  return { dir, configFile, config, keys, keyFiles, env }
}

export interface ConsoleProc {
  child: ChildProcess
  /** The one-time link it printed. */
  url: string
  origin: string
  stderr(): string
  /** SIGTERM, then its exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** The built `interlock console`, resolved once it printed its link. */
export function startConsoleProc(args: string[], cwd: string, env: Record<string, string> = {}): Promise<ConsoleProc> {
  assertCliBuilt()
  const bin = join(inject('cliRoot'), 'bin', 'run.js')
  const child = spawn(process.execPath, [bin, 'console', ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: cwd, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  return new Promise((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      const m = /^Console: (http:\/\/127\.0\.0\.1:\d+)\/\?token=\S+$/m.exec(stdout)
      if (!m) return
      resolve({
        child,
        url: m[0].slice('Console: '.length),
        origin: m[1]!,
        stderr: () => stderr,
        stop: async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
          return exited
        },
      })
    })
    void exited.then(({ code, signal }) => reject(new Error(`interlock console exited (${code ?? signal}) before printing its link:\n${stdout}${stderr}`)))
  })
}

export interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** One request with exactly these headers (fetch would not let a test set Host). */
export function send(url: string, o: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method: o.method ?? 'GET', headers: { host: u.host, ...o.headers }, agent: false },
      (res) => {
        let body = ''
        res.setEncoding('utf8').on('data', (d: string) => (body += d))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      },
    )
    req.on('error', reject)
    req.end(o.body)
  })
}

/** Opens the one-time link: the session cookie (name=value) it sets. */
export async function signIn(link: string): Promise<string> {
  const r = await send(link)
  const cookie = [r.headers['set-cookie'] ?? []].flat()[0]
  if (r.status !== 303 || !cookie) throw new Error(`the link did not sign in: ${r.status} ${r.body}`)
  return cookie.split(';')[0]!
}
