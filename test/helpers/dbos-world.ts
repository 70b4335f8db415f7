/**
 * The DBOS example (examples/dbos/) run as its README says, by plain `node`,
 * from a project of its own: its files copied into a temp folder whose
 * node_modules holds the built package (build-once.ts) under its npm name and
 * @dbos-inc from the repository. Around it: a PostgreSQL database for DBOS's
 * system tables and Interlock's journal, and the emulators of the services
 * its steps change, whose ledgers are the truth the tests check.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { inject } from 'vitest'
import { S3Emulator } from '../emulators/s3.js'
import { SendgridEmulator } from '../emulators/sendgrid.js'
import { StripeEmulator } from '../emulators/stripe.js'

const repo = join(import.meta.dirname, '../..')
const packageName = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { name: string }).name

export interface ExampleProject {
  dir: string
  cleanup(): void
}

/** A folder with the example's files and a node_modules of the built package and DBOS. */
export function exampleProject(example = 'dbos'): ExampleProject {
  const dir = mkdtempSync(join(tmpdir(), `interlock-example-${example}-`))
  cpSync(join(repo, 'examples', example), dir, { recursive: true })
  mkdirSync(join(dir, 'node_modules'))
  symlinkSync(inject('cliRoot'), join(dir, 'node_modules', packageName), 'dir')
  symlinkSync(join(repo, 'node_modules', '@dbos-inc'), join(dir, 'node_modules', '@dbos-inc'), 'dir')
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

export interface Emulators {
  stripe: StripeEmulator
  s3: S3Emulator
  sendgrid: SendgridEmulator
  /** The variables examples/dbos/interlock.toml reads. */
  env: Record<string, string>
  close(): Promise<void>
}

export async function startEmulators(databaseUrl: string): Promise<Emulators> {
  const stripe = await new StripeEmulator().start()
  const s3 = await new S3Emulator().start()
  s3.createBucket('credit-notes')
  const sendgrid = await new SendgridEmulator().start()
  return {
    stripe,
    s3,
    sendgrid,
    env: {
      DATABASE_URL: databaseUrl,
      STRIPE_API_KEY: stripe.apiKey,
      STRIPE_BASE_URL: stripe.url,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      S3_ENDPOINT: s3.url,
      SENDGRID_API_KEY: sendgrid.apiKey,
      SENDGRID_BASE_URL: sendgrid.url,
    },
    close: async () => {
      await Promise.all([stripe.close(), s3.close(), sendgrid.close()])
    },
  }
}

export interface NodeRun {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
  /** The last line of stdout that is a JSON object, parsed. */
  json?: Record<string, unknown>
}

/** Processes started here and not yet ended: `stopAll` kills what a failed test left running. */
const running = new Set<ChildProcess>()

/** Runs `node <file> ...args` in `cwd` (Node strips the types of a .ts file itself) and waits for it to end. */
export function runNode(cwd: string, file: string, args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<NodeRun> {
  return startNode(cwd, file, args, env, timeoutMs).done
}

/** Starts `node <file> ...args` in `cwd`; `done` settles when it ends (killed after `timeoutMs`, and then rejected). */
export function startNode(cwd: string, file: string, args: string[], env: Record<string, string>, timeoutMs = 60_000): { child: ChildProcess; done: Promise<NodeRun> } {
  let child!: ChildProcess
  const done = new Promise<NodeRun>((resolve, reject) => {
    child = spawn(process.execPath, [file, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: cwd, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    running.add(child)
    let stdout = ''
    let stderr = ''
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${file} ${args.join(' ')} did not end within ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`))
    }, timeoutMs)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      running.delete(child)
      resolve({ code, signal, stdout, stderr, json: lastJson(stdout) })
    })
  })
  return { child, done }
}

/** SIGKILLs every process started here that is still running. */
export function stopAll(): void {
  for (const child of running) child.kill('SIGKILL')
  running.clear()
}

function lastJson(stdout: string): Record<string, unknown> | undefined {
  for (const line of stdout.trim().split('\n').reverse()) {
    if (!line.startsWith('{')) continue
    try {
      return JSON.parse(line) as Record<string, unknown>
    } catch {
      // a log line that merely starts with a brace
    }
  }
  return undefined
}

/** One SQL query on the database, on a connection of its own. */
export async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<T>(sql, params)).rows
  } finally {
    await client.end()
  }
}

/** The steps DBOS has checkpointed for a workflow, in order: name, and whether it recorded an output or an error. */
export async function checkpointedSteps(url: string, workflowID: string): Promise<{ name: string; error: boolean }[]> {
  const rows = await query<{ function_name: string; error: string | null }>(
    url,
    'SELECT function_name, error FROM dbos.operation_outputs WHERE workflow_uuid = $1 ORDER BY function_id',
    [workflowID],
  )
  return rows.map((r) => ({ name: r.function_name, error: r.error !== null }))
}
