#!/usr/bin/env node
// Runs the commands from src/ without a build. tsx is registered from this file, not with
// `node --import tsx`, which would resolve tsx from the working directory and fail elsewhere.
import { rmSync } from 'node:fs'
import { register } from 'tsx/esm/api'
import { execute } from '@oclif/core'

// `npm run build` leaves oclif.manifest.json beside package.json: the commands of that build.
// oclif would list those (and their flags) here too, hiding a command added in src/ since.
rmSync(new URL('../oclif.manifest.json', import.meta.url), { force: true })

register()
await execute({ development: true, dir: import.meta.url })
