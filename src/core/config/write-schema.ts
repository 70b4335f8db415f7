/**
 * Writes schemas/interlock.schema.json and the README's interlock.toml
 * reference from schema.ts (`npm run schema`).
 * The file is committed for editors and packagers; a unit test fails when it
 * drifts from schema.ts, so the two cannot disagree in a release.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { withReference } from './reference.js'
import { configSchema } from './schema.js'

export const SCHEMA_FILE = 'schemas/interlock.schema.json'

export function schemaJson(): string {
  return `${JSON.stringify(configSchema, null, 2)}\n`
}

export function writeSchema(root: string): string {
  const file = resolve(root, SCHEMA_FILE)
  writeFileSync(file, schemaJson())
  const readme = resolve(root, 'README.md')
  writeFileSync(readme, withReference(readFileSync(readme, 'utf8')))
  return file
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')
  process.stdout.write(`wrote ${writeSchema(root)} and the README's config reference\n`)
}
