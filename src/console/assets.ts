/**
 * The console's script and style sheet, shipped in the package beside this
 * module (the build copies src/console/assets into dist/console/assets:
 * scripts/copy-assets.mjs). Read once at start: nothing is fetched from
 * anywhere at run time, and a package missing them fails at start, not on
 * the first page.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { ConfigError } from '../core/errors.js'

export interface Asset {
  type: string
  body: Buffer
}

export type Assets = ReadonlyMap<string, Asset>

const FILES: Record<string, string> = {
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
}

export function loadAssets(dir: URL = new URL('./assets/', import.meta.url)): Assets {
  const assets = new Map<string, Asset>()
  for (const [name, type] of Object.entries(FILES)) {
    const path = fileURLToPath(new URL(name, dir))
    try {
      assets.set(name, { type, body: readFileSync(path) })
    } catch (cause) {
      throw new ConfigError(`the console's ${name} is missing from this installation (${path})`, [], {
        hint: 'Reinstall the package; from a checkout, run `npm run build`, which copies the console\'s assets into dist.',
        cause,
      })
    }
  }
  return assets
}
