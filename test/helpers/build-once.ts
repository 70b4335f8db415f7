/**
 * Builds the CLI once per test run for the end-to-end tests, into a private
 * copy of the package (package.json, bin/, dist/, a node_modules link) under
 * the OS temp folder. The e2e tests then run `node <root>/bin/run.js` exactly
 * as a user runs the installed binary, while the working tree's own dist/ is
 * left alone, so a concurrent build or test run cannot pull files from under
 * the binary being tested.
 *
 * As `npm run build` does, oclif.manifest.json is generated beside
 * package.json once dist/ is there, so the binary starts as the published
 * package does: from the manifest, without loading every command.
 *
 * Type errors are the typecheck's business, not the e2e tests': when tsc
 * reports errors but still emits the CLI, the run goes on with a warning.
 * A build that emitted nothing does not abort the whole run either (unit
 * tests do not need it): it is handed to the e2e tests, which fail with the
 * compiler output.
 *
 * INTERLOCK_TEST_CLI_ROOT names a copy built this way already (a run started
 * by another test run, test/e2e/test-command.test.ts): it is used as it is,
 * neither rebuilt nor removed.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'

const ENTRY_POINTS = ['cli/base-command.js', 'commands/config/show.js']
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

export default function setup(project: TestProject): () => void {
  const given = process.env.INTERLOCK_TEST_CLI_ROOT
  if (given) {
    const built = ENTRY_POINTS.every((file) => existsSync(join(given, 'dist', file)))
    project.provide('cliRoot', given)
    project.provide('cliBuildError', built ? '' : `INTERLOCK_TEST_CLI_ROOT=${given} holds no built CLI (dist/${ENTRY_POINTS[0]} is missing)`)
    return () => {}
  }
  const root = mkdtempSync(join(tmpdir(), 'interlock-cli-'))
  cpSync(join(repo, 'package.json'), join(root, 'package.json'))
  // What the published package carries besides dist/ (package.json "files").
  for (const dir of ['bin', 'schemas']) cpSync(join(repo, dir), join(root, dir), { recursive: true })
  symlinkSync(join(repo, 'node_modules'), join(root, 'node_modules'), 'dir')

  const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc')
  const build = spawnSync(process.execPath, [tsc, '-p', join(repo, 'tsconfig.build.json'), '--outDir', join(root, 'dist')], {
    cwd: repo,
    encoding: 'utf8',
  })
  // What `npm run build` copies beside the compiled code (the console's assets).
  const assets = spawnSync(process.execPath, [join(repo, 'scripts', 'copy-assets.mjs'), join(root, 'dist')], { cwd: repo, encoding: 'utf8' })
  const output = `tsc exited ${build.status}\n${build.stdout}${build.stderr}${assets.status === 0 ? '' : `\ncopy-assets exited ${assets.status}\n${assets.stderr}`}`
  // tsc emits JavaScript despite type errors elsewhere in the tree; what matters here is the CLI's own entry points.
  const emitted = ENTRY_POINTS.every((file) => existsSync(join(root, 'dist', file)))
  if (build.status !== 0 && emitted) console.warn(`[build-once] the CLI built with type errors:\n${output}`)
  const manifest = emitted ? writeManifest(root) : ''
  project.provide('cliRoot', root)
  project.provide('cliBuildError', emitted ? manifest : output)

  return () => rmSync(root, { recursive: true, force: true })
}

/** oclif.manifest.json from the built commands; the failure's output, or '' when written. */
function writeManifest(root: string): string {
  const oclif = join(repo, 'node_modules', 'oclif', 'bin', 'run.js')
  const run = spawnSync(process.execPath, [oclif, 'manifest', root], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, OCLIF_SKIP_NEW_VERSION_CHECK: 'true' },
  })
  return run.status === 0 && existsSync(join(root, 'oclif.manifest.json')) ? '' : `oclif manifest exited ${run.status}\n${run.stdout}${run.stderr}`
}

declare module 'vitest' {
  export interface ProvidedContext {
    cliRoot: string
    cliBuildError: string
  }
}
