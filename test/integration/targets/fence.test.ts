/**
 * The fence is asked at the moment a request would be written, not when it
 * was asked for: a request that waits (for a connection, behind another
 * request) while its lease runs out is dropped unsent. Judged by what a real
 * HTTP server received.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Agent } from 'undici'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { toEffect } from '../../../src/core/effect.js'
import { HttpClient, HttpTarget } from '../../../src/core/targets/http/index.js'
import { Transport } from '../../../src/core/targets/s3/transport.js'
import { dispatchFault } from '../../helpers/dispatch-fault.js'

const received: string[] = []
let server: http.Server
let base: string

beforeAll(async () => {
  server = http.createServer((req, res) => {
    received.push(`${req.method} ${req.url}`)
    req.resume()
    req.on('end', () => {
      const delay = req.url === '/slow' ? 300 : 0
      setTimeout(() => res.end('{"ok":true}'), delay)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((r) => server.close(r))
})
beforeEach(() => {
  received.length = 0
})

const settings = { timeoutMs: 3000, connectTimeoutMs: 1000 }

const fault = dispatchFault

describe('the fence, asked right before the request is written', () => {
  it('a fence that says no sends nothing, also on a kept-alive connection', async () => {
    const client = new HttpClient('svc', settings)
    await client.send('GET', `${base}/warm`)
    const f = await fault(client.send('POST', `${base}/apply`, {}, '{}', { fence: () => false }))
    expect(f.kind).toBe('fenced')
    expect(f.message).toMatch(/target svc: POST http:\/\/127\.0\.0\.1:\d+: not sent/)
    expect(received).toEqual(['GET /warm'])
    await client.close()
  })

  it('a request queued behind another is checked when its turn comes, not when it was asked for', async () => {
    // One connection, one request at a time: the second waits for the first's slow answer.
    const dispatcher = new Agent({ connections: 1, pipelining: 1 })
    const client = new HttpClient('svc', settings, { dispatcher })
    const asked = Date.now()
    let checks = 0
    const fence = () => {
      checks++
      return Date.now() - asked < 100
    }
    expect(fence()).toBe(true)
    const slow = client.send('GET', `${base}/slow`)
    const queued = client.send('POST', `${base}/apply`, {}, '{}', { fence })
    expect((await fault(queued)).kind).toBe('fenced')
    expect((await slow).status).toBe(200)
    expect(checks).toBe(2)
    expect(received).toEqual(['GET /slow'])
    // Still holding: sent as usual.
    const ok = await client.send('POST', `${base}/apply`, {}, '{}', { fence: () => true })
    expect(ok.status).toBe(200)
    expect(received).toEqual(['GET /slow', 'POST /apply'])
    await client.close()
    await dispatcher.close()
  })

  it('a target passes its apply context through: a lost lease is a fenced fault, nothing applied', async () => {
    const t = new HttpTarget('svc', { tier: 2, url: `${base}/apply`, queryUrl: `${base}/applied/{effect_id}`, ...settings })
    const e = toEffect({ thread: 't', target: 'svc', action: 'do', args: { n: 1 } })
    expect((await fault(t.apply(e, { attempt: 1, recovering: false, fence: () => false }))).kind).toBe('fenced')
    expect(received).toEqual([])
    await t.apply(e, { attempt: 1, recovering: false, fence: () => true })
    expect(received).toEqual(['POST /apply'])
    await t.close()
  })

  it('the S3 transport asks the fence too', async () => {
    const transport = new Transport('bucket', settings)
    const f = await fault(transport.send({ method: 'PUT', url: `${base}/key`, body: 'x', fence: () => false }))
    expect(f.kind).toBe('fenced')
    expect(received).toEqual([])
    expect((await transport.send({ method: 'PUT', url: `${base}/key`, body: 'x', fence: () => true })).status).toBe(200)
    expect(received).toEqual(['PUT /key'])
    await transport.close()
  })
})
