#!/usr/bin/env node
// The Node version first, before anything that could fail under the wrong one (src/cli/node-runtime.ts).
import { refuseUnsupportedNode } from '../dist/cli/node-runtime.js'

if (!refuseUnsupportedNode()) {
  const { execute } = await import('@oclif/core')
  await execute({ dir: import.meta.url })
}
