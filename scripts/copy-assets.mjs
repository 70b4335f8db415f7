// Copies what the build ships besides compiled TypeScript into the output folder
// (default dist/): the console's script and style sheet (src/console/assets).
// `npm run build` runs it after tsc; test/helpers/build-once.ts too, for its own copy.
import { cpSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const out = resolve(process.argv[2] ?? join(repo, 'dist'))
for (const dir of ['console/assets']) cpSync(join(repo, 'src', dir), join(out, dir), { recursive: true })
