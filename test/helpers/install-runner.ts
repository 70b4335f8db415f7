/**
 * Runs `install` in a process of its own, for the concurrent-install tests:
 * `node --import tsx install-runner.ts '<store config JSON>'`. Prints the
 * report as JSON, or `{"error": ...}` and exits 1.
 */
import { install } from '../../src/core/stores/migrate.js'

try {
  const report = await install(JSON.parse(process.argv[2]!))
  process.stdout.write(JSON.stringify(report))
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e) }))
  process.exitCode = 1
}
