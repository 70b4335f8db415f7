/**
 * A user's project with target modules of its own: a temp folder holding
 * interlock.toml, the module files, and node_modules/agent-interlock linked
 * to the CLI built for this run (build-once.ts), so a module's
 * `import { defineTarget, DispatchFault } from 'agent-interlock'` resolves as
 * it does in an installed project: to a copy of the package other than the
 * one the in-process tests run from src.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { inject } from 'vitest'

/** README.md's target module, taken from the README itself: the module users copy is the one the tests run. */
export const JIRA_MODULE = readmeModule()

function readmeModule(): string {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
  const block = /<!-- the target module the tests run[^>]*-->\n```js\n([\s\S]*?)```/.exec(readme)
  if (!block) throw new Error('README.md: the target module block (after "<!-- the target module the tests run") is gone')
  return block[1]!
}

export interface ModuleProject {
  dir: string
  write(file: string, text: string): string
  cleanup(): void
}

export function moduleProject(files: Record<string, string> = {}): ModuleProject {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-module-'))
  mkdirSync(join(dir, 'node_modules'))
  symlinkSync(inject('cliRoot'), join(dir, 'node_modules', 'agent-interlock'), 'dir')
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'agent-project', private: true, type: 'module' }))
  const write = (file: string, text: string) => {
    const path = join(dir, file)
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, text)
    return path
  }
  for (const [file, text] of Object.entries(files)) write(file, text)
  return { dir, write, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

/** [targets.jira] of type module, for the Jira module above. */
export function jiraModuleToml(url: string, settleMs = 700): string {
  return `[targets.jira]
type = "module"
module = "./targets/jira.js"
base_url = "${url}"
auth = "\${JIRA_BASIC_AUTH}"
settle_ms = ${settleMs}
`
}
