/**
 * The library example users copy, read from where the docs print it, and the
 * project around it that the tests run it in. Every test that runs the example
 * reads it through libraryExample(), so moving the text moves one line here.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { generateKeyPair } from '../../src/core/crypto/keys.js'

const README = join(import.meta.dirname, '../../README.md')

/** The first TypeScript block of the README's "As a library" section. */
export function libraryExample(): string {
  const readme = readFileSync(README, 'utf8')
  const section = readme.slice(readme.indexOf('## As a library'))
  const block = /```ts\n([\s\S]*?)```/.exec(section)
  if (!block) throw new Error('the README has no ```ts block under "## As a library"')
  return block[1]!
}

/**
 * Writes into `project` an interlock.toml whose [[policy.rules]] hold the
 * example's effect on the `docs` target (the git repository at `repoPath`),
 * so the example builds through the front door and leaves the repository
 * untouched; and example.mjs, the example as printed plus one line that
 * prints `{ status }` of its outcome as JSON.
 */
export function writeLibraryExampleProject(project: string, repoPath: string): void {
  writeFileSync(
    join(project, 'interlock.toml'),
    `[store]
path = "journal.db"

[targets.docs]
type = "repo"
path = "${repoPath}"

[[operators]]
name = "alice"
public_key = "${generateKeyPair('operator', 'alice').publicKey}"

[[policy.rules]]
name = "docs-review"
target = "docs"
`,
  )
  writeFileSync(join(project, 'example.mjs'), `${libraryExample()}\nconsole.log(JSON.stringify({ status: outcome.status }))\n`)
}
