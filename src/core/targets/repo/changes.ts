/**
 * Turning a repo action into a change of the working tree that can be undone.
 *
 * An apply writes files, stages them and commits. If it fails before the
 * commit lands, the working tree goes back to what it was (the snapshot), so a
 * refused or abandoned effect leaves no half-made edit behind for a person's
 * next `git commit -a` to pick up.
 */
import { lstat, mkdir, mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { DispatchFault } from '../../errors.js'
import type { RepoAction } from './actions.js'
import type { Git } from './git.js'
import { resolveRepoPath } from './paths.js'

export interface PreparedChange {
  /** Repository-relative paths the change touches (stage and commit exactly these). */
  paths: string[]
  /** Make the change in the working tree. */
  write(): Promise<void>
  /** Put the working tree back as it was before `write`. */
  restore(): Promise<void>
  /** Remove temporary files. */
  dispose(): Promise<void>
}

function refused(message: string): DispatchFault {
  return new DispatchFault('refused', message)
}

export async function prepareChange(git: Git, root: string, action: RepoAction): Promise<PreparedChange> {
  switch (action.action) {
    case 'write_file': {
      const { rel, abs } = await resolveRepoPath(root, action.path)
      const st = await lstat(abs).catch(() => null)
      if (st?.isSymbolicLink()) throw refused(`write_file: ${rel} is a symbolic link; write the file it points to instead`)
      if (st && !st.isFile()) throw refused(`write_file: ${rel} exists and is not a regular file`)
      const snapshot = await takeSnapshot(root, [rel])
      return {
        paths: [rel],
        write: async () => {
          await mkdir(path.dirname(abs), { recursive: true })
          await writeFile(abs, action.content)
        },
        restore: () => restoreSnapshot(root, snapshot),
        dispose: async () => {},
      }
    }
    case 'delete_file': {
      const { rel, abs } = await resolveRepoPath(root, action.path)
      const st = await lstat(abs).catch(() => null)
      if (!st) throw refused(`delete_file: ${rel} does not exist`)
      if (!st.isFile()) throw refused(`delete_file: ${rel} is not a regular file`)
      const snapshot = await takeSnapshot(root, [rel])
      return {
        paths: [rel],
        write: () => unlink(abs),
        restore: () => restoreSnapshot(root, snapshot),
        dispose: async () => {},
      }
    }
    case 'apply_patch': {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'interlock-patch-'))
      const dispose = () => rm(dir, { recursive: true, force: true })
      try {
        const file = path.join(dir, 'change.patch')
        await writeFile(file, action.patch)
        const paths = await patchPaths(git, root, file)
        const snapshot = await takeSnapshot(root, paths)
        return {
          paths,
          write: async () => {
            await git.run(['apply', '--whitespace=nowarn', file])
          },
          restore: () => restoreSnapshot(root, snapshot),
          dispose,
        }
      } catch (e) {
        await dispose()
        throw e
      }
    }
  }
}

/** Every path a patch touches (both sides of a rename), each checked to stay inside the repository. */
async function patchPaths(git: Git, root: string, file: string): Promise<string[]> {
  let out: string
  try {
    out = await git.run(['apply', '--numstat', '-z', file])
  } catch (e) {
    throw new DispatchFault('refused', `apply_patch: the patch cannot be read: ${(e as Error).message}`, { cause: e })
  }
  const tokens = out.split('\0')
  const paths = new Set<string>()
  for (let i = 0; i < tokens.length; i++) {
    const m = /^[^\t]*\t[^\t]*\t(.*)$/s.exec(tokens[i]!)
    if (!m) continue
    if (m[1]) paths.add(m[1])
    else {
      paths.add(tokens[i + 1]!)
      paths.add(tokens[i + 2]!)
      i += 2
    }
  }
  if (paths.size === 0) throw refused('apply_patch: the patch changes no file')
  const checked: string[] = []
  for (const p of paths) checked.push((await resolveRepoPath(root, p)).rel)
  return checked.sort()
}

type Snapshot = Map<string, Buffer | null>

async function takeSnapshot(root: string, rels: readonly string[]): Promise<Snapshot> {
  const snap: Snapshot = new Map()
  for (const rel of rels) {
    const abs = path.join(root, ...rel.split('/'))
    snap.set(rel, await readFile(abs).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return null
      throw e
    }))
  }
  return snap
}

async function restoreSnapshot(root: string, snap: Snapshot): Promise<void> {
  for (const [rel, content] of snap) {
    const abs = path.join(root, ...rel.split('/'))
    if (content === null) await rm(abs, { force: true })
    else {
      await mkdir(path.dirname(abs), { recursive: true })
      await writeFile(abs, content)
    }
  }
}
