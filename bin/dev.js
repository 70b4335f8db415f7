#!/usr/bin/env node
// Runs the commands from src/ without a build. tsx is registered from this file, not with
// `node --import tsx`, which would resolve tsx from the working directory and fail elsewhere.
import { register } from 'tsx/esm/api'
import { execute } from '@oclif/core'

register()
await execute({ development: true, dir: import.meta.url })
