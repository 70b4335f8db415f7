// Writes what the build ships besides compiled TypeScript into the output folder
// (default dist/), once tsc has run: the console's script and style sheet
// (src/console/assets), and interlock.toml's validator compiled ahead of time.
// `npm run build` runs it after tsc; test/helpers/build-once.ts too, for its own copy.
import { cpSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Ajv } from 'ajv'
import standalone from 'ajv/dist/standalone/index.js'

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const out = resolve(process.argv[2] ?? join(repo, 'dist'))
for (const dir of ['console/assets']) cpSync(join(repo, 'src', dir), join(out, dir), { recursive: true })

// Compiling the schema took every command a third of a second or more at start (bench/cli/start.ts);
// the built CLI loads this instead (src/core/config/validate.ts, with the same options).
const { configSchema } = await import(pathToFileURL(join(out, 'core/config/schema.js')).href)
const { AJV_OPTIONS, CUSTOM_KEYWORDS } = await import(pathToFileURL(join(out, 'core/config/validator-options.js')).href)
const ajv = new Ajv({ ...AJV_OPTIONS, code: { source: true } })
for (const k of CUSTOM_KEYWORDS) ajv.addKeyword(k)
writeFileSync(join(out, 'core/config/config-validator.cjs'), standalone.default(ajv, ajv.compile(configSchema)))
