// npm run docs: regenerate the generated sections of the guides from the built CLI
// (run `npm run build` first): the command reference in docs/cli.md, then the
// config reference in docs/config.md and schemas/interlock.schema.json.
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const { COMMANDS_FILE, withCommandReference } = await import(new URL('../dist/cli/reference.js', import.meta.url).href)
const { CONFIG_DOC, writeSchema } = await import(new URL('../dist/core/config/write-schema.js', import.meta.url).href)
const cli = `${root}${COMMANDS_FILE}`
writeFileSync(cli, await withCommandReference(readFileSync(cli, 'utf8'), root))
writeSchema(root)
console.log(`wrote the command reference in ${COMMANDS_FILE}, the config reference in ${CONFIG_DOC}, and schemas/interlock.schema.json`)
