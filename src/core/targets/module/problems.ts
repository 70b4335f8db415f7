/** What keeps a module target from being made, found while the file is read (config/load.ts), with the file's other problems. */
import type { ModuleTargetConfig } from '../../config/types.js'
import { loadTargetModule, moduleSettingsProblems } from './load.js'

export function targetModuleProblems(name: string, config: ModuleTargetConfig, secrets: readonly string[]): string[] {
  const loaded = loadTargetModule(name, config.module, config.dir, secrets)
  if ('problems' in loaded) return loaded.problems
  return moduleSettingsProblems(name, loaded, config.settings, secrets)
}
