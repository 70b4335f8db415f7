/**
 * An agent example from `examples/<name>` run as a user runs it, in a project
 * of its own (example-project.ts: the built package under its npm name, the
 * framework packages linked), started with `node <file>` (Node's own type
 * stripping) in a clean environment, and type-checked against the built
 * package's types.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { exampleProject } from './example-project.js'

const repo = join(import.meta.dirname, '../..')

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
  const { dir, cleanup } = exampleProject(name, dependencies)
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
      mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true })
      symlinkSync(join(repo, 'node_modules', '@types', 'node'), join(dir, 'node_modules', '@types', 'node'), 'dir')
      const options = { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] }
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, include: ['*.ts'] }))
      const tsc = spawnSync(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { encoding: 'utf8' })
      return tsc.status === 0 ? '' : `tsc exited ${tsc.status}\n${tsc.stdout}${tsc.stderr}`
    },
    cleanup,
  }
}
