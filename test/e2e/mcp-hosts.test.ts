/**
 * The host recipes of docs/mcp.md ("Hosts"), as written: each JSON entry
 * (Claude Desktop and Cursor's `mcpServers`, VS Code's `servers`), the
 * command after `claude mcp add … --`, and the server command the MCP
 * Inspector's CLI is given, is started the way a host starts it (the SDK's
 * StdioClientTransport: its command and args, `interlock` found on PATH)
 * with the recipe's config path pointing at a test interlock.toml, and must
 * serve the server's tools. The Inspector itself is not installed here.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'
import { memoryToml } from '../helpers/mcp.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** The config path every recipe names, replaced by the test's. */
const DOC_CONFIG = '/home/me/.interlock/interlock.toml'

interface Recipe {
  host: string
  command: string
  args: string[]
}

/** The "Hosts" section of docs/mcp.md. */
function hostsSection(): string {
  const doc = readFileSync(fileURLToPath(new URL('../../docs/mcp.md', import.meta.url)), 'utf8')
  const start = doc.indexOf('\n## Hosts\n')
  expect(start, 'docs/mcp.md has a "## Hosts" section').toBeGreaterThan(0)
  const end = doc.indexOf('\n## ', start + 1)
  return doc.slice(start, end < 0 ? undefined : end)
}

function fenced(section: string, lang: string): string[] {
  return [...section.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!)
}

/** Every recipe of the section: JSON entries, and the server command of each shell line. */
function recipes(): Recipe[] {
  const section = hostsSection()
  const found: Recipe[] = []
  for (const block of fenced(section, 'json')) {
    const json = JSON.parse(block) as { mcpServers?: Record<string, { command: string; args?: string[]; type?: string }>; servers?: Record<string, { command: string; args?: string[]; type?: string }> }
    for (const [host, entries] of [['mcpServers', json.mcpServers], ['VS Code servers', json.servers]] as const) {
      for (const [name, e] of Object.entries(entries ?? {})) {
        if (host === 'VS Code servers') expect(e.type, `servers.${name}.type`).toBe('stdio')
        found.push({ host: `${host}.${name}`, command: e.command, args: e.args ?? [] })
      }
    }
  }
  for (const block of fenced(section, 'sh')) {
    for (const line of block.split('\n').filter(Boolean)) {
      // Plain words only: split as a shell would split them.
      expect(line, 'a recipe line quotes nothing').not.toMatch(/["'\\$]/)
      const words = line.split(/\s+/)
      if (words[0] === 'claude') {
        const [command, ...args] = words.slice(words.indexOf('--') + 1)
        found.push({ host: 'claude mcp add', command: command!, args })
      } else if (words.slice(0, 3).join(' ') === 'npx @modelcontextprotocol/inspector --cli') {
        // Inspector 2 under --cli: the server command first, its own options after "--".
        const [command, ...args] = words.slice(3, words.indexOf('--'))
        found.push({ host: 'MCP Inspector CLI', command: command!, args })
      } else {
        throw new Error(`a shell recipe this test does not know: ${line}`)
      }
    }
  }
  return found
}

/** A folder with interlock.toml fronting server-memory, and a bin folder with `interlock` on it. */
function installed(): { dir: string; bin: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-hosts-'))
  dirs.push(dir)
  const config = join(dir, 'interlock.toml')
  writeFileSync(config, memoryToml(dir))
  const bin = join(dir, 'bin')
  mkdirSync(bin)
  const cli = join(inject('cliRoot'), 'bin', 'run.js')
  writeFileSync(join(bin, 'interlock'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(cli)} "$@"\n`)
  chmodSync(join(bin, 'interlock'), 0o755)
  return { dir, bin, config }
}

const all = recipes()

describe('the host recipes of docs/mcp.md', () => {
  it('has one for each host, each starting the installed interlock with its config', () => {
    expect(all.map((r) => r.host)).toEqual(['mcpServers.notes', 'VS Code servers.notes', 'claude mcp add', 'MCP Inspector CLI'])
    for (const r of all) {
      // Never "npx interlock": that name on npm is another package.
      expect(r.command, r.host).toBe('interlock')
      expect(r.args, r.host).toEqual(['mcp-proxy', '--config', DOC_CONFIG])
    }
  })

  it.each(all)('$host: started as a host starts it, it serves the server\'s tools', async (r) => {
    const { dir, bin, config } = installed()
    const transport = new StdioClientTransport({
      command: r.command,
      args: r.args.map((a) => (a === DOC_CONFIG ? config : a)),
      cwd: dir,
      env: { PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: dir, NO_COLOR: '1' },
      stderr: 'pipe',
    })
    let stderr = ''
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
    const client = new Client({ name: `recipe ${r.host}`, version: '1' })
    try {
      await client.connect(transport)
      expect((await client.listTools()).tools.map((t) => t.name), stderr).toContain('create_entities')
    } finally {
      await client.close()
    }
  })
})
