// npm run docs: regenerate the README's generated sections from the built CLI
// (run `npm run build` first): the command reference, then the config reference.
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const { withCommandReference } = await import(new URL('../dist/cli/reference.js', import.meta.url).href)
const { writeSchema } = await import(new URL('../dist/core/config/write-schema.js', import.meta.url).href)
const readme = `${root}README.md`
writeFileSync(readme, await withCommandReference(readFileSync(readme, 'utf8'), root))
writeSchema(root)
console.log('wrote README.md command and config references, and schemas/interlock.schema.json')
