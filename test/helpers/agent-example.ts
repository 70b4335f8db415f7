/**
 * An agent example from `examples/<name>` run as a user runs it: copied into
 * a project of its own whose node_modules holds the built package under its
 * npm name (build-once.ts) and the framework packages the example imports,
 * so `agent-interlock/<name>` resolves through package.json `exports`
 * exactly as it does once installed; started with `node <file>` (Node's own
 * type stripping), in a clean environment.
 */
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { inject } from 'vitest'

const repo = join(import.meta.dirname, '../..')
const packageName = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { name: string }).name

export interface ExampleRun {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface AgentExample {
  dir: string
  /** Runs `node <file> ...args` in the project, with only PATH and `env` set. */
  run(file: string, args: string[], env: Record<string, string>, timeoutMs?: number): Promise<ExampleRun>
  /** tsc over the example's files against the built package's types, as a user's editor sees them: its output, '' when clean. */
  typecheck(): string
  cleanup(): void
}

export function agentExample(name: string, dependencies: string[]): AgentExample {
  const dir = mkdtempSync(join(tmpdir(), `interlock-example-${name}-`))
  cpSync(join(repo, 'examples', name), dir, { recursive: true })
  const link = (pkg: string, to: string) => {
    mkdirSync(dirname(join(dir, 'node_modules', pkg)), { recursive: true })
    symlinkSync(to, join(dir, 'node_modules', pkg), 'dir')
  }
  link(packageName, inject('cliRoot'))
  for (const dep of dependencies) link(dep, join(repo, 'node_modules', dep))
  return {
    dir,
    run: (file, args, env, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [file, ...args], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
        let stdout = ''
        let stderr = ''
        child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
        const timer = setTimeout(() => {
          child.kill('SIGKILL')
          reject(new Error(`${name}/${file} did not finish within ${timeoutMs} ms\n${stderr}`))
        }, timeoutMs)
        child.on('error', reject)
        child.on('exit', (code, signal) => {
          clearTimeout(timer)
          resolve({ code, signal, stdout, stderr })
        })
      }),
    typecheck: () => {
      link('@types/node', join(repo, 'node_modules', '@types', 'node'))
      const options = { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] }
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, include: ['*.ts'] }))
      const tsc = spawnSync(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { encoding: 'utf8' })
      return tsc.status === 0 ? '' : `tsc exited ${tsc.status}\n${tsc.stdout}${tsc.stderr}`
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}
