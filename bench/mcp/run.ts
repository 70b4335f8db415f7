/**
 * bench/mcp: what `interlock mcp-proxy` costs a tool call, against the same
 * call straight to the server, in one run.
 *
 * The server is the real @modelcontextprotocol/server-filesystem over stdio,
 * the client the SDK's Client. Four ways to call, in alternating slices so
 * load from other work on the machine falls on all alike:
 *
 *   read direct      read_text_file of a small file, client → server
 *   read floor       the same through forward.ts, a process that forwards
 *                    bytes both ways and nothing else: what any proxy in a
 *                    process of its own pays
 *   read proxied     the same through the proxy (a read tool: forwarded)
 *   write forwarded  write_file through a proxy that declares it "read"
 *                    (forwarded, not journaled): the hop alone
 *   write journaled  write_file through the proxy at its own tier (1, from
 *                    its idempotentHint), journaled in SQLite
 *   write direct     write_file straight to the server
 *
 * and, in the same run, bench/gate's (a'): the rows one journal append
 * writes, as one durable SQLite transaction. A journaled call makes two
 * durable commits (PROPOSED, AUTHORIZED and DISPATCHED in one, after the
 * premise check; COMMITTED), so its cost over the forwarded call should be
 * about 2 × (a'), the first commit carrying three records' rows.
 *
 * Goals (issue 25): read proxied ÷ read floor ≤ 1.05 (p50); write journaled
 * − write forwarded ≤ 2 × (a') + 0.15 ms. (Issue 10's, still printed: read
 * proxied ÷ read direct ≤ 1.1; journaled − forwarded ≤ 2 × (a').)
 *
 *   npm run build && npx tsx bench/mcp/run.ts [--seconds 10]
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { appendRows } from '../gate/sqlite-baselines.js'

const args = process.argv.slice(2)
const seconds = Number(args[args.indexOf('--seconds') + 1] || 0) || 10
const SLICES = 10
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const require = createRequire(import.meta.url)
const filesystem = join(dirname(require.resolve('@modelcontextprotocol/server-filesystem/package.json')), 'dist', 'index.js')

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

async function connect(command: string, argv: string[], cwd: string): Promise<Client> {
  const client = new Client({ name: 'bench-mcp', version: '1' }, { capabilities: {} })
  await client.connect(new StdioClientTransport({ command, args: argv, cwd, stderr: 'ignore', env: { PATH: process.env.PATH ?? '', HOME: cwd } }))
  return client
}

function proxyDir(root: string, name: string, files: string, extra = ''): string {
  const dir = join(root, name)
  mkdirSync(dir)
  writeFileSync(join(dir, 'interlock.toml'), `[store]\npath = "journal.db"\n[targets.fs]\ntype = "mcp"\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(filesystem)}, ${JSON.stringify(files)}]\n${extra}`)
  return dir
}

interface Series {
  label: string
  call: (i: number) => Promise<unknown>
  ms: number[]
  time: number
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'interlock-bench-mcp-'))
  const files = join(root, 'files')
  mkdirSync(files)
  writeFileSync(join(files, 'small.txt'), `${'a line of text\n'.repeat(20)}`)
  const bin = join(repo, 'bin', 'run.js')
  const direct = await connect(process.execPath, [filesystem, files], root)
  const floorProxy = await connect(process.execPath, [join(repo, 'bench', 'mcp', 'forward.ts'), process.execPath, filesystem, files], root)
  const proxied = await connect(process.execPath, [bin, 'mcp-proxy'], proxyDir(root, 'journaled', files))
  const forwarded = await connect(process.execPath, [bin, 'mcp-proxy'], proxyDir(root, 'forwarded', files, '[targets.fs.tools.write_file]\ntier = "read"\n'))
  const floor = await appendRows(join(root, 'floor.db'))
  const read = { name: 'read_text_file', arguments: { path: join(files, 'small.txt') } }
  const write = (tag: string, i: number) => ({ name: 'write_file', arguments: { path: join(files, `${tag}.txt`), content: `${tag} ${i}\n` } })
  const series: Series[] = [
    { label: 'read direct', call: () => direct.callTool(read), ms: [], time: 0 },
    { label: 'read floor (bare forwarder)', call: () => floorProxy.callTool(read), ms: [], time: 0 },
    { label: 'read proxied (forwarded)', call: () => proxied.callTool(read), ms: [], time: 0 },
    { label: 'write direct', call: (i) => direct.callTool(write('direct', i)), ms: [], time: 0 },
    { label: 'write forwarded (declared read)', call: (i) => forwarded.callTool(write('forwarded', i)), ms: [], time: 0 },
    { label: 'write journaled (tier 1, SQLite)', call: (i) => proxied.callTool(write('journaled', i)), ms: [], time: 0 },
  ]
  const appendMs: number[] = []
  try {
    // Warm up every path (JIT, the proxy's first session, the file cache).
    for (const s of series) for (let i = 0; i < 50; i++) await s.call(-i - 1)
    console.log(`bench/mcp: ${seconds}s per series in ${SLICES} alternating slices, server-filesystem over stdio, disk of ${root}, load ${loadavg()}`)
    let n = 0
    for (let slice = 0; slice < SLICES; slice++) {
      for (const s of series) {
        const end = performance.now() + (seconds * 1000) / SLICES
        const start = performance.now()
        while (performance.now() < end) {
          const t = performance.now()
          const r = (await s.call(n++)) as { isError?: boolean; content?: { text?: string }[] }
          if (r.isError) throw new Error(`${s.label}: ${r.content?.[0]?.text}`)
          s.ms.push(performance.now() - t)
        }
        s.time += performance.now() - start
      }
      const end = performance.now() + (seconds * 1000) / SLICES
      while (performance.now() < end) {
        const t = performance.now()
        floor.step()
        appendMs.push(performance.now() - t)
      }
    }
    const stats = new Map<string, { p50: number; p99: number; rate: number }>()
    console.log(`${'series'.padEnd(36)} ${'p50 ms'.padStart(9)} ${'p99 ms'.padStart(9)} ${'calls/s'.padStart(9)}`)
    for (const s of series) {
      const sorted = [...s.ms].sort((a, b) => a - b)
      const st = { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), rate: s.ms.length / (s.time / 1000) }
      stats.set(s.label, st)
      console.log(`${s.label.padEnd(36)} ${st.p50.toFixed(3).padStart(9)} ${st.p99.toFixed(3).padStart(9)} ${st.rate.toFixed(0).padStart(9)}`)
    }
    const appends = [...appendMs].sort((a, b) => a - b)
    const a50 = quantile(appends, 0.5)
    console.log(`${"(a') one journal append, SQLite".padEnd(36)} ${a50.toFixed(3).padStart(9)} ${quantile(appends, 0.99).toFixed(3).padStart(9)} ${(appendMs.length / (appendMs.reduce((x, y) => x + y, 0) / 1000)).toFixed(0).padStart(9)}`)
    const g = (l: string) => stats.get(l)!
    const readRatio = g('read proxied (forwarded)').p50 / g('read direct').p50
    const journal = g('write journaled (tier 1, SQLite)').p50 - g('write forwarded (declared read)').p50
    const floorRatio = g('read proxied (forwarded)').p50 / g('read floor (bare forwarder)').p50
    console.log(`read proxied ÷ read floor, p50             ${floorRatio.toFixed(2)}   goal ≤ 1.05`)
    console.log(`read floor ÷ read direct, p50              ${(g('read floor (bare forwarder)').p50 / g('read direct').p50).toFixed(2)}   (the hop any proxy process pays)`)
    console.log(`read proxied ÷ read direct, p50            ${readRatio.toFixed(2)}   goal (issue 10) ≤ 1.1`)
    console.log(`hop (write forwarded − write direct), p50   ${(g('write forwarded (declared read)').p50 - g('write direct').p50).toFixed(3)} ms`)
    console.log(`journal (write journaled − forwarded), p50  ${journal.toFixed(3)} ms   2 × (a') = ${(2 * a50).toFixed(3)} ms   ratio ${(journal / (2 * a50)).toFixed(2)}   goal (issue 10) ≤ 1`)
    const budget = 2 * a50 + 0.15
    console.log(`journal against 2 × (a') + 0.15 ms = ${budget.toFixed(3)} ms: ratio ${(journal / budget).toFixed(2)}, over by ${Math.max(0, journal - budget).toFixed(3)} ms   goal ≤ 1`)
    console.log(`load ${loadavg()} at the end`)
  } finally {
    floor.close()
    await Promise.allSettled([direct.close(), floorProxy.close(), proxied.close(), forwarded.close()])
    rmSync(root, { recursive: true, force: true })
  }
}

await main()
