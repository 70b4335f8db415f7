/**
 * The http target's read-only probe, through `interlock check`'s library
 * entry point against a real local HTTP server: only GET and HEAD are sent;
 * a tier-2 query_url must answer 404 for an effect that never happened; a
 * tier-1 declaration is a warning no probe can lift; 401 is a refused
 * credential.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runChecks } from '../../../src/core/check/index.js'

const seen: string[] = []
let answer = 404
let origin = ''
const server = http.createServer((req, res) => {
  seen.push(`${req.method} ${req.url}`)
  if (req.headers.authorization === 'Bearer wrong') return void res.writeHead(401).end()
  res.writeHead(req.url?.startsWith('/effects/') ? answer : 405).end()
})

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((r) => server.close(() => r())))

async function checkHttp(target: string, env: Record<string, string> = {}) {
  const cwd = mkdtempSync(join(tmpdir(), 'interlock-http-probe-'))
  writeFileSync(join(cwd, 'interlock.toml'), `[targets.svc]\ntype = "http"\n${target}\n`)
  const report = await runChecks({ cwd, env, only: ['targets'], timeoutMs: 2000 })
  return Object.fromEntries(report.checks.filter((c) => c.family === 'targets').map((c) => [c.id.replace('targets.svc.', ''), c]))
}

describe('http target probe', () => {
  it('tier 2: GETs query_url for an unknown effect; 404 honours the tier', async () => {
    answer = 404
    seen.length = 0
    const rows = await checkHttp(`tier = 2\nurl = "${origin}/effects"\nquery_url = "${origin}/effects/{effect_id}"`)
    expect(rows.reachable!.status).toBe('pass')
    expect(rows.tier!.status).toBe('pass')
    expect(seen).toEqual(['GET /effects/interlock-check-no-such-effect'])
  })

  it('tier 2: a query_url that says an unknown effect happened fails the tier', async () => {
    answer = 200
    const rows = await checkHttp(`tier = 2\nurl = "${origin}/effects"\nquery_url = "${origin}/effects/{effect_id}"`)
    expect(rows.tier).toMatchObject({ status: 'fail', detail: expect.stringContaining('recovery would take every effect as done') })
  })

  it('tier 1 and 3: HEAD on the origin; tier 1 is a warning', async () => {
    seen.length = 0
    const one = await checkHttp(`tier = 1\nurl = "${origin}/pay/{effect_id}"`)
    expect(one.reachable!.status).toBe('pass')
    expect(one.tier).toMatchObject({ status: 'warn', detail: expect.stringContaining('Idempotency-Key') })
    const three = await checkHttp(`tier = 3\nurl = "${origin}/notify"`)
    expect(three.tier!.status).toBe('pass')
    expect(seen).toEqual(['HEAD /', 'HEAD /'])
  })

  it('a refused Authorization header fails the credentials check, naming no secret', async () => {
    const rows = await checkHttp(`tier = 3\nurl = "${origin}/notify"\nheaders = { Authorization = "\${SVC_AUTH}" }`, { SVC_AUTH: 'Bearer wrong' })
    expect(rows.credentials!.status).toBe('fail')
    expect(JSON.stringify(rows)).not.toContain('Bearer wrong')
  })
})
