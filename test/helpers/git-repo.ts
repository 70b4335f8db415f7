/** Real, throw-away git repositories for target tests. */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const ID = ['-c', 'user.name=Test Person', '-c', 'user.email=person@example.invalid', '-c', 'commit.gpgsign=false']

export interface TempRepo {
  path: string
  git(...args: string[]): Promise<string>
  write(rel: string, content: string): void
  read(rel: string): string
  exists(rel: string): boolean
  /** Write files and commit them all, as a person would. */
  commit(files: Record<string, string>, message?: string): Promise<void>
  cleanup(): void
}

export async function tempRepo(files: Record<string, string> = {}): Promise<TempRepo> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'interlock-repo-'))
  const repo: TempRepo = {
    path: dir,
    git: async (...args) => (await run('git', [...ID, ...args], { cwd: dir })).stdout,
    write: (rel, content) => {
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true })
      writeFileSync(path.join(dir, rel), content)
    },
    read: (rel) => readFileSync(path.join(dir, rel), 'utf8'),
    exists: (rel) => existsSync(path.join(dir, rel)),
    commit: async (fs, message = 'a person commits') => {
      for (const [rel, content] of Object.entries(fs)) repo.write(rel, content)
      await repo.git('add', '-A')
      await repo.git('commit', '-q', '-m', message)
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
  await repo.git('init', '-q', '-b', 'main')
  if (Object.keys(files).length > 0) await repo.commit(files, 'initial')
  return repo
}
