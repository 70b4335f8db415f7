#!/usr/bin/env node
// A stdio MCP server that needs an environment variable to start, as one
// behind a corporate proxy or CA needs HTTPS_PROXY or NODE_EXTRA_CA_CERTS:
//   node needs-env.mjs <VARIABLE> <server entry> [args...]
// With <VARIABLE> set (non-empty), it runs the server entry (a reference
// server from npm) in this process; without it, it says so on stderr and never
// answers initialize, as a server stuck on its first network call would.
// It ends when its stdin closes.
import { pathToFileURL } from 'node:url'

const [name, entry, ...args] = process.argv.slice(2)
if (process.env[name]) {
  process.argv = [process.argv[0], entry, ...args]
  await import(pathToFileURL(entry).href)
} else {
  process.stderr.write(`needs-env: ${name} is not set; waiting\n`)
  process.stdin.on('end', () => process.exit(0))
  process.stdin.resume()
}
