/**
 * Writes schemas/interlock.schema.json and the interlock.toml reference in
 * docs/config.md from schema.ts (`npm run schema`).
 * The file is committed for editors and packagers; a unit test fails when it
 * drifts from schema.ts, so the two cannot disagree in a release.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { withReference } from './reference.js'
import { configSchema } from './schema.js'

export const SCHEMA_FILE = 'schemas/interlock.schema.json'
/** The guide whose config-reference markers hold the generated reference. */
export const CONFIG_DOC = 'docs/config.md'

export function schemaJson(): string {
  return `${JSON.stringify(configSchema, null, 2)}\n`
}

export function writeSchema(root: string): string {
  const file = resolve(root, SCHEMA_FILE)
  writeFileSync(file, schemaJson())
  const doc = resolve(root, CONFIG_DOC)
  writeFileSync(doc, withReference(readFileSync(doc, 'utf8')))
  return file
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')
  process.stdout.write(`wrote ${writeSchema(root)} and the config reference in ${CONFIG_DOC}\n`)
}
