/**
 * Who asked, as an agent host and an operator see it: the built `interlock
 * mcp-proxy` over stdio (its principal: the OS user it runs as), the real
 * servers behind it, and `interlock outbox list | show` on the journal.
 * - every journaled call carries its principal and the W3C trace context
 *   it came with: to the server, and into the journal;
 * - what a thread read outlives the proxy that served the read: an edit
 *   over a file changed after the read is REJECTED by the next proxy.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { memoryToml, proxyClient, resultMeta, resultText, SERVERS, stdioServer, wireLog, type ProxyClient } from '../helpers/mcp.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
const clients: ProxyClient[] = []
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()))
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function scratch(): string {
  const d = mkdtempSync(join(tmpdir(), 'interlock-mcp-callers-'))
  dirs.push(d)
  return d
}

async function open(cwd: string): Promise<ProxyClient> {
  const c = await proxyClient({ cwd })
  clients.push(c)
  return c
}

const ME = `user:${userInfo().username}`
const TRACE = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'rojo=00f067aa0ba902b7' }

describe('principal and trace context, from the call to the journal', () => {
  it('the server gets the call\'s traceparent; outbox list and show say who asked and in which trace', async () => {
    const cwd = scratch()
    writeFileSync(join(cwd, 'interlock.toml'), memoryToml(cwd))
    const proxy = await open(cwd)
    const r = await proxy.client.callTool({ name: 'create_entities', arguments: { entities: [{ name: 'alice', entityType: 'person', observations: [] }] }, _meta: TRACE })
    expect(r.isError).toBeFalsy()
    const id = resultMeta(r)['interlock/effect'] as string
    expect(wireLog(join(cwd, 'wire.log'))).toEqual([{ tool: 'create_entities', effect: id, meta: { ...TRACE, 'interlock/effect': id } }])

    const listed = await interlock(['outbox', 'list', '--json'], { cwd })
    expect(listed.code, listed.stderr).toBe(0)
    expect(JSON.parse(listed.stdout).effects).toEqual([expect.objectContaining({ effectId: id, principal: ME, state: 'COMMITTED' })])
    const table = await interlock(['outbox', 'list', '--wide'], { cwd })
    expect(table.stdout).toMatch(/principal/)
    expect(table.stdout).toContain(ME)
    const mine = await interlock(['outbox', 'list', '--principal', ME, '--json'], { cwd })
    expect(JSON.parse(mine.stdout).effects.map((e: { effectId: string }) => e.effectId)).toEqual([id])
    const nobody = await interlock(['outbox', 'list', '--principal', 'token:nobody', '--json'], { cwd })
    expect(JSON.parse(nobody.stdout).effects).toEqual([])

    const shown = await interlock(['outbox', 'show', id, '--json'], { cwd })
    expect(shown.code, shown.stderr).toBe(0)
    const details = JSON.parse(shown.stdout)
    expect(details.effect).toMatchObject({ id, principal: ME, trace: TRACE })
    expect(details.history[0].data.effect).toMatchObject({ principal: ME, trace: TRACE })
    const human = await interlock(['outbox', 'show', id], { cwd })
    expect(human.stdout).toContain(`Principal ${ME}`)
    expect(human.stdout).toContain(`Trace    ${TRACE.traceparent} (tracestate ${TRACE.tracestate})`)
    // The journal verifies with them in it.
    const verified = await interlock(['outbox', 'verify', '--json'], { cwd })
    expect(verified.code, verified.stdout + verified.stderr).toBe(0)
  })
})

describe('premises outlive the proxy that served the read', () => {
  const restsOn = '[targets.fs.tools.edit_file]\ntier = 3\nrests_on = [{ tool = "read_text_file", args = { path = "{args.path}" } }]\n'
  const thread = { 'interlock/thread': 'conversation-7' }
  const edit = { name: 'edit_file', arguments: { path: 'notes.txt', edits: [{ oldText: 'draft', newText: 'final' }] }, _meta: thread }

  function files(): { dir: string; files: string } {
    const dir = scratch()
    const files = join(dir, 'files')
    mkdirSync(files)
    writeFileSync(join(dir, 'interlock.toml'), `[store]\npath = "journal.db"\n[targets.fs]\ntype = "mcp"\n${stdioServer(SERVERS.filesystem, [files])}${restsOn}`)
    writeFileSync(join(files, 'notes.txt'), 'a draft\n')
    return { dir, files }
  }

  it('read through one proxy, the file changed, the edit through a new proxy: REJECTED, the file untouched', async () => {
    const { dir, files: f } = files()
    const first = await open(dir)
    const read = await first.client.callTool({ name: 'read_text_file', arguments: { path: 'notes.txt' }, _meta: thread })
    expect(resultText(read)).toBe('a draft\n')
    await first.close()
    await first.exited
    writeFileSync(join(f, 'notes.txt'), 'a draft, edited by someone else\n')

    const second = await open(dir)
    const r = await second.client.callTool(edit)
    expect(r.isError).toBe(true)
    expect(resultMeta(r)['interlock/state']).toBe('REJECTED')
    expect(resultText(r)).toMatch(/read_text_file \{"path":"notes.txt"\} answers differently/)
    expect(readFileSync(join(f, 'notes.txt'), 'utf8')).toBe('a draft, edited by someone else\n')
  })

  it('unchanged since the read through the first proxy: the edit through the new one goes', async () => {
    const { dir, files: f } = files()
    const first = await open(dir)
    await first.client.callTool({ name: 'read_text_file', arguments: { path: 'notes.txt' }, _meta: thread })
    await first.close()
    await first.exited
    const second = await open(dir)
    const r = await second.client.callTool(edit)
    expect(r.isError).toBeFalsy()
    expect(readFileSync(join(f, 'notes.txt'), 'utf8')).toBe('a final\n')
  })
})
