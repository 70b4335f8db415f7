/**
 * This package's version, from its package.json (two levels up from both
 * src/core and dist/core): what an OpenTelemetry meter or tracer names as its
 * instrumentation scope's version. Read once, on first use.
 */
import { readFileSync } from 'node:fs'

let version: string | undefined

export function packageVersion(): string {
  if (version === undefined) {
    try {
      version = String((JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown }).version ?? 'unknown')
    } catch {
      // A bundler that moved this file: the scope still works, unversioned.
      version = 'unknown'
    }
  }
  return version
}
