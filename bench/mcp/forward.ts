/**
 * The floor of any out-of-process MCP proxy over stdio: starts the upstream
 * server (the command line it is given) and forwards bytes, stdin to the
 * upstream's stdin and the upstream's stdout to stdout, untouched (whole
 * lines, as they come). Nothing else: no parsing, no journal.
 *
 *   node bench/mcp/forward.ts <command> [args...]
 */
import { spawn } from 'node:child_process'

const [command, ...args] = process.argv.slice(2)
const upstream = spawn(command!, args, { stdio: ['pipe', 'pipe', 'ignore'] })
process.stdin.pipe(upstream.stdin)
upstream.stdout.pipe(process.stdout)
upstream.on('exit', (code) => process.exit(code ?? 0))
