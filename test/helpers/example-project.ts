/**
 * An example from `examples/` run as a user runs it: copied into a project of
 * its own whose node_modules holds the built package under its npm name
 * (build-once.ts) and the engine packages the example imports, so
 * `agent-interlock/restate` resolves through package.json `exports` exactly
 * as it does once installed.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { inject } from 'vitest'

const repo = join(import.meta.dirname, '../..')
const packageName = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { name: string }).name

export interface ExampleProject {
  dir: string
  cleanup(): void
}

/** `examples/<name>` in a fresh project, with `dependencies` linked from this repository's node_modules (tsx always). */
export function exampleProject(name: string, dependencies: string[]): ExampleProject {
  const dir = mkdtempSync(join(tmpdir(), `interlock-example-${name}-`))
  cpSync(join(repo, 'examples', name), dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `example-${name}`, private: true, type: 'module' }))
  const link = (pkg: string, to: string) => {
    mkdirSync(dirname(join(dir, 'node_modules', pkg)), { recursive: true })
    symlinkSync(to, join(dir, 'node_modules', pkg), 'dir')
  }
  link(packageName, inject('cliRoot'))
  for (const dep of new Set([...dependencies, 'tsx'])) link(dep, join(repo, 'node_modules', dep))
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}
