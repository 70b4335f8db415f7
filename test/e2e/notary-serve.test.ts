/**
 * `interlock notary keygen` and `interlock notary serve` as a user runs them:
 * a service key made by keygen and trusted in [notary.services], the notary
 * serving on the [notary] listen address, a record signed with that key
 * written, a forged one refused, and SIGTERM stopping it.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, inject, it } from 'vitest'
import { generateKeyPair, loadPrivateKey } from '../../src/core/crypto/keys.js'
import { sha256Hex } from '../../src/core/hash.js'
import { GENESIS, signRecord } from '../../src/core/notary/records.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'

beforeAll(assertCliBuilt)

describe('interlock notary', () => {
  it('keygen makes a service key; serve trusts it from [notary], writes its signed claim, refuses a forged one, and stops on SIGTERM', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-notary-serve-'))
    const made = await interlock(['notary', 'keygen', '--name', 'payments', '--out', 'payments.key', '--json'], { cwd })
    expect(made.code, made.stderr).toBe(0)
    const result = JSON.parse(made.stdout) as { publicKey: string; kind: string; toml: string }
    expect(result.kind).toBe('service')
    expect(result.toml).toBe(`[notary.services]\npayments = "${result.publicKey}"`)
    const agent = generateKeyPair('relay', 'agent-1')
    writeFileSync(join(cwd, 'interlock.toml'), `[notary]\nlisten = "127.0.0.1:0"\npath = "notary.db"\n[notary.agents]\nagent-1 = "${agent.publicKey}"\n${result.toml}\n`)

    const child = spawn(process.execPath, [join(inject('cliRoot'), 'bin', 'run.js'), 'notary', 'serve'], { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd, NO_COLOR: '1' } })
    let stderr = ''
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d
        const m = /listening on (http:\/\/\S+),/.exec(stderr)
        if (m) resolve(m[1]!)
      })
      child.on('exit', (code) => reject(new Error(`notary serve exited ${code}: ${stderr}`)))
    })
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    try {
      expect((await fetch(`${url}/healthz`)).status).toBe(200)
      const key = loadPrivateKey(join(cwd, 'payments.key'))
      const effect = sha256Hex('notary-serve-e2e')
      const statement = { effect, attempt: 1, kind: 'claim' as const, writer: 'payments', at: new Date().toISOString(), body: {}, prev: GENESIS }
      const forged = await fetch(`${url}/v1/records`, { method: 'POST', body: JSON.stringify(signRecord(statement, generateKeyPair('service', 'payments'))) })
      expect(forged.status).toBe(403)
      expect(await forged.json()).toMatchObject({ status: 'forged' })
      const genuine = await fetch(`${url}/v1/records`, { method: 'POST', body: JSON.stringify(signRecord(statement, key)) })
      expect(genuine.status).toBe(201)
      const attempt = await (await fetch(`${url}/v1/effects/${effect}/attempts/1`)).json()
      expect(attempt).toMatchObject({ state: 'CLAIMED', claimedBy: 'payments' })
    } finally {
      child.kill('SIGTERM')
    }
    expect(await exited).toBe(0)
  })

  it('serve without a [notary] section exits 3 and says what to add', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-notary-serve-'))
    writeFileSync(join(cwd, 'interlock.toml'), '[store]\npath = "journal.db"\n')
    const run = await interlock(['notary', 'serve'], { cwd })
    expect(run.code, run.stderr).toBe(3)
    expect(run.stderr).toContain('has no [notary] section')
  })
})
