/**
 * Running the `git` binary: execFile with an argument array (never a shell),
 * a timeout on every call, and an environment that cannot redirect it.
 *
 * Every call passes its own identity and switches through `-c`, so a machine
 * without a global git identity works, and a user's config cannot make our
 * commits sign (and hang on a passphrase) or run hooks (which could reject the
 * effect or rewrite its trailer).
 */
import { execFile } from 'node:child_process'
import { InputError } from '../../errors.js'

export interface GitIdentity {
  name: string
  email: string
}

export interface GitOptions {
  /** The git binary (default "git", found on PATH). */
  binary?: string
  /** Per call (default 60000). A git killed by it may leave a lock; see locks.ts. */
  timeoutMs?: number
}

export class GitCommandError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number | null,
    readonly stderr: string,
    readonly timedOut: boolean,
    cause: unknown,
  ) {
    super(`git ${args[0] ?? ''} failed${timedOut ? ' (timed out)' : ''}: ${firstLine(stderr) || String(exitCode)}`, { cause })
    this.name = 'GitCommandError'
  }
}

const AUTHOR = /^\s*([^<>]*?)\s*<([^<>\s]+)>\s*$/

/** Parses "Name <email>", as config.author is written. */
export function parseAuthor(author: string): GitIdentity {
  const m = AUTHOR.exec(author)
  if (!m || !m[1]) throw new InputError(`author must look like "Name <email>" (got ${JSON.stringify(author)})`)
  return { name: m[1], email: m[2]! }
}

/**
 * GIT_DIR, GIT_INDEX_FILE, GIT_AUTHOR_* and friends would point the call at
 * another repository or identity (they are set, for example, inside a hook),
 * so none is inherited. LC_ALL=C keeps messages parseable (lock detection).
 */
function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v
  env.GIT_TERMINAL_PROMPT = '0'
  env.LC_ALL = 'C'
  env.LANGUAGE = 'C'
  return env
}

export class Git {
  private readonly binary: string
  private readonly timeoutMs: number

  constructor(
    readonly cwd: string,
    readonly identity: GitIdentity,
    options: GitOptions = {},
  ) {
    this.binary = options.binary ?? 'git'
    this.timeoutMs = options.timeoutMs ?? 60_000
  }

  run(args: string[]): Promise<string> {
    // Paths are always literal: a file named "*.ts" or ":(exclude)x" must not act as a pattern.
    const full = [
      '--literal-pathspecs',
      '-c', `user.name=${this.identity.name}`,
      '-c', `user.email=${this.identity.email}`,
      '-c', 'user.useConfigOnly=false',
      '-c', 'commit.gpgsign=false',
      '-c', 'log.showSignature=false',
      '-c', 'core.hooksPath=/dev/null',
      ...args,
    ]
    return new Promise((resolve, reject) => {
      execFile(
        this.binary,
        full,
        { cwd: this.cwd, env: gitEnv(), timeout: this.timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
        (err, stdout, stderr) => {
          if (!err) return resolve(stdout)
          const e = err as NodeJS.ErrnoException & { code?: number | string; killed?: boolean; signal?: string | null }
          const exit = typeof e.code === 'number' ? e.code : null
          reject(new GitCommandError(args, exit, stderr || e.message, Boolean(e.killed && e.signal), err))
        },
      )
    })
  }

  /** Like run, but a non-zero exit yields null (for questions such as "does this ref exist?"). */
  async tryRun(args: string[]): Promise<string | null> {
    try {
      return await this.run(args)
    } catch (e) {
      if (e instanceof GitCommandError && e.exitCode !== null && !e.timedOut) return null
      throw e
    }
  }
}

export function firstLine(text: string): string {
  return text.split('\n').map((l) => l.trim()).find((l) => l.length > 0) ?? ''
}
