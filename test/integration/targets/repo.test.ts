import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, symlinkSync, utimesSync, writeFileSync, existsSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { toEffect, type Effect } from '../../../src/core/effect.js'
import { InputError } from '../../../src/core/errors.js'
import { RepoTarget } from '../../../src/core/targets/repo/index.js'
import type { ApplyContext } from '../../../src/core/targets/target.js'
import { tempRepo, type TempRepo } from '../../helpers/git-repo.js'
import { dispatchFault } from '../../helpers/dispatch-fault.js'

const first: ApplyContext = { attempt: 1, recovering: false }
const repos: TempRepo[] = []
const cleanups: (() => void)[] = []

afterEach(() => {
  for (const c of cleanups.splice(0)) c()
  for (const r of repos.splice(0)) r.cleanup()
})

async function repoWith(files: Record<string, string> = {}): Promise<TempRepo> {
  const r = await tempRepo(files)
  repos.push(r)
  return r
}

function effect(action: string, args: Record<string, unknown>, extra: Partial<Effect> = {}): Effect {
  return { ...toEffect({ thread: 't1', target: 'repo', action, args: args as never }), ...extra }
}

const fault = dispatchFault

describe('RepoTarget apply and query', () => {
  it('commits a write with the effect trailer that git itself parses, and query finds it', async () => {
    const repo = await repoWith({ 'README.md': 'hello\n' })
    const target = new RepoTarget('repo', { path: repo.path, branch: 'main', author: 'Agent Smith <agent@example.invalid>' })
    const e = effect('write_file', { path: 'src/a.ts', content: 'export const a = 1\n', message: 'add a' })

    expect(await target.query(e)).toBeNull()
    const receipt = await target.apply(e, first)

    expect(receipt.commit).toBe((await repo.git('rev-parse', 'HEAD')).trim())
    expect(repo.read('src/a.ts')).toBe('export const a = 1\n')
    const message = await repo.git('show', '-s', '--format=%B', 'HEAD')
    expect(message.startsWith('add a\n')).toBe(true)
    const parsed = await new Promise<string>((resolve, reject) => {
      const p = spawn('git', ['interpret-trailers', '--parse'], { cwd: repo.path })
      let out = ''
      p.stdout.on('data', (d) => (out += d))
      p.on('error', reject)
      p.on('close', () => resolve(out))
      p.stdin.end(message)
    })
    expect(parsed.trim()).toBe(`Interlock-Effect: ${e.id}`)
    expect((await repo.git('show', '-s', '--format=%an <%ae>', 'HEAD')).trim()).toBe('Agent Smith <agent@example.invalid>')
    expect((await repo.git('status', '--porcelain')).trim()).toBe('')

    expect(await target.query(e)).toEqual({ commit: receipt.commit, branch: 'main' })
    expect(await target.query(effect('write_file', { path: 'src/a.ts', content: 'other' }))).toBeNull()
  })

  it('a relay whose lease ran out before git commit commits nothing and leaves the worktree clean', async () => {
    const repo = await repoWith({ 'README.md': 'hello\n' })
    const target = new RepoTarget('repo', { path: repo.path, branch: 'main' })
    const head = (await repo.git('rev-parse', 'HEAD')).trim()
    const e = effect('write_file', { path: 'README.md', content: 'changed\n', message: 'change' })
    const f = await fault(target.apply(e, { ...first, fence: () => false }))
    expect(f.kind).toBe('fenced')
    expect(f.message).toMatch(/git commit on main: not sent/)
    expect((await repo.git('rev-parse', 'HEAD')).trim()).toBe(head)
    expect(repo.read('README.md')).toBe('hello\n')
    expect((await repo.git('status', '--porcelain')).trim()).toBe('')
    expect(await target.query(e)).toBeNull()
  })

  it('works on a fresh repository with no commits and no git identity anywhere', async () => {
    const repo = await repoWith()
    const home = mkdtempSync(path.join(os.tmpdir(), 'interlock-home-'))
    const saved = { HOME: process.env.HOME, XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME }
    process.env.HOME = home
    delete process.env.XDG_CONFIG_HOME
    cleanups.push(() => {
      process.env.HOME = saved.HOME
      if (saved.XDG_CONFIG_HOME !== undefined) process.env.XDG_CONFIG_HOME = saved.XDG_CONFIG_HOME
      rmSync(home, { recursive: true, force: true })
    })
    const target = new RepoTarget('repo', { path: repo.path })
    const e = effect('write_file', { path: 'first.txt', content: 'one\n' })
    const receipt = await target.apply(e, first)
    expect(await target.query(e)).toEqual(receipt)
    expect((await repo.git('show', '-s', '--format=%an <%ae>', 'HEAD')).trim()).toBe('Interlock <interlock@localhost>')
  })

  it('deletes a file, and refuses to delete one that does not exist', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n', 'b.txt': 'b\n' })
    const target = new RepoTarget('repo', { path: repo.path })
    const receipt = await target.apply(effect('delete_file', { path: 'a.txt' }), first)
    expect(repo.exists('a.txt')).toBe(false)
    expect((await repo.git('ls-tree', '--name-only', String(receipt.commit))).trim()).toBe('b.txt')

    const f = await fault(target.apply(effect('delete_file', { path: 'nope.txt' }), first))
    expect(f.kind).toBe('refused')
    expect(f.message).toContain('nope.txt')
  })

  it('applies a patch and commits every file it touches', async () => {
    const repo = await repoWith({ 'a.txt': 'one\ntwo\n', 'b.txt': 'x\n' })
    repo.write('a.txt', 'one\n2\n')
    repo.write('b.txt', 'y\n')
    const patch = await repo.git('diff')
    await repo.git('checkout', '--', '.')
    const target = new RepoTarget('repo', { path: repo.path })
    const e = effect('apply_patch', { patch, message: 'fix numbers' })
    const receipt = await target.apply(e, first)
    expect(repo.read('a.txt')).toBe('one\n2\n')
    expect((await repo.git('diff-tree', '--no-commit-id', '--name-only', '-r', String(receipt.commit))).trim().split('\n')).toEqual(['a.txt', 'b.txt'])
    expect(await target.query(e)).toEqual(receipt)

    const stale = await fault(target.apply(effect('apply_patch', { patch }), first))
    expect(stale.kind).toBe('refused')
    expect((await repo.git('status', '--porcelain')).trim()).toBe('')
  })

  it('commits only the paths it touched, leaving a person\'s other work staged and unstaged', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' })
    repo.write('b.txt', 'b staged\n')
    await repo.git('add', 'b.txt')
    repo.write('c.txt', 'c unstaged\n')
    const target = new RepoTarget('repo', { path: repo.path })
    const receipt = await target.apply(effect('write_file', { path: 'a.txt', content: 'A\n' }), first)
    expect((await repo.git('diff-tree', '--no-commit-id', '--name-only', '-r', String(receipt.commit))).trim()).toBe('a.txt')
    expect((await repo.git('status', '--porcelain')).split('\n').filter(Boolean).sort()).toEqual([' M c.txt', 'M  b.txt'])
  })

  it('refuses paths outside the repository with an InputError naming the path', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' })
    const outside = mkdtempSync(path.join(os.tmpdir(), 'interlock-outside-'))
    cleanups.push(() => rmSync(outside, { recursive: true, force: true }))
    symlinkSync(outside, path.join(repo.path, 'escape'))
    const target = new RepoTarget('repo', { path: repo.path })

    for (const bad of ['../evil.txt', 'src/../../evil.txt', '/etc/passwd', '.git/hooks/pre-commit', 'a/.GIT/config']) {
      expect(() => target.validateArgs('write_file', { path: bad, content: 'x' })).toThrow(InputError)
      expect(() => target.validateArgs('write_file', { path: bad, content: 'x' })).toThrow(JSON.stringify(bad))
      const f = await fault(target.apply(effect('write_file', { path: bad, content: 'x' }), first))
      expect(f.kind).toBe('refused')
      expect(f.cause).toBeInstanceOf(InputError)
      expect(f.message).toContain(JSON.stringify(bad))
    }
    const viaLink = await fault(target.apply(effect('write_file', { path: 'escape/evil.txt', content: 'x' }), first))
    expect(viaLink.kind).toBe('refused')
    expect(viaLink.message).toContain('escape/evil.txt')
    expect(existsSync(path.join(outside, 'evil.txt'))).toBe(false)
    await expect(target.capture('write_file', { path: 'escape/evil.txt', content: 'x' })).rejects.toThrow(InputError)
  })

  it('refuses unknown actions, unknown arguments and a message that forges the trailer', () => {
    const target = new RepoTarget('repo', { path: '/nonexistent' })
    expect(() => target.validateArgs('merge', {})).toThrow(/no action "merge"/)
    expect(() => target.validateArgs('write_file', { path: 'a', contents: 'x' })).toThrow(/unknown argument\(s\) contents/)
    expect(() => target.validateArgs('write_file', { path: 'a', content: 'x', message: 'hi\n\nInterlock-Effect: abc' })).toThrow(InputError)
    expect(() => new RepoTarget('repo', { path: '/x', branch: '--force' })).toThrow(InputError)
    expect(() => new RepoTarget('repo', { path: '/x', author: 'nobody' })).toThrow(/Name <email>/)
  })

  it('undoes the working-tree change when git refuses the commit (an ignored path)', async () => {
    const repo = await repoWith({ '.gitignore': 'secret.env\n' })
    const target = new RepoTarget('repo', { path: repo.path })
    const f = await fault(target.apply(effect('write_file', { path: 'secret.env', content: 'KEY=1\n' }), first))
    expect(f.kind).toBe('refused')
    expect(f.message).toMatch(/ignored/)
    expect(repo.exists('secret.env')).toBe(false)
    expect((await repo.git('status', '--porcelain')).trim()).toBe('')
  })

  it('refuses when another branch is checked out, and when the path is not a repository top', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n', 'sub/b.txt': 'b\n' })
    await repo.git('switch', '-q', '-c', 'feature')
    const target = new RepoTarget('repo', { path: repo.path, branch: 'main' })
    const f = await fault(target.apply(effect('write_file', { path: 'a.txt', content: 'x' }), first))
    expect(f.kind).toBe('refused')
    expect(f.message).toContain('branch feature')

    const sub = new RepoTarget('repo', { path: path.join(repo.path, 'sub') })
    expect((await fault(sub.apply(effect('write_file', { path: 'b.txt', content: 'x' }), first))).message).toMatch(/not the top of a git working tree/)
  })

  it('re-applied after a crash, returns the commit that already landed instead of committing twice', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' })
    const target = new RepoTarget('repo', { path: repo.path })
    const e = effect('write_file', { path: 'a.txt', content: 'b\n' })
    const receipt = await target.apply(e, first)
    expect(await target.apply(e, { attempt: 1, recovering: true })).toEqual(receipt)
    expect(await target.apply(e, { attempt: 2, recovering: false })).toEqual(receipt)
    expect((await repo.git('rev-list', '--count', 'HEAD')).trim()).toBe('2')
  })

  it('checks the premises again under its lock and refuses a changed world', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' })
    const target = new RepoTarget('repo', { path: repo.path })
    const args = { path: 'a.txt', content: 'agent\n' }
    const premises = await target.capture('write_file', args)
    await repo.commit({ 'a.txt': 'a person\n' })
    const f = await fault(target.apply(effect('write_file', args, { premises }), first))
    expect(f.kind).toBe('premise')
    expect(f.message).toMatch(/a\.txt changed since the decision/)
    expect(repo.read('a.txt')).toBe('a person\n')
  })

  it('serialises concurrent applies on one repository, across targets', async () => {
    const repo = await repoWith({ 'seed.txt': 's\n' })
    const one = new RepoTarget('one', { path: repo.path })
    const two = new RepoTarget('two', { path: repo.path })
    const effects = Array.from({ length: 12 }, (_, i) => effect('write_file', { path: `f/${i}.txt`, content: `${i}\n` }))
    const receipts = await Promise.all(effects.map((e, i) => (i % 2 ? one : two).apply(e, first)))
    expect(new Set(receipts.map((r) => r.commit)).size).toBe(12)
    expect((await repo.git('rev-list', '--count', 'HEAD')).trim()).toBe('13')
    for (const e of effects) expect(await one.query(e)).not.toBeNull()
    expect((await repo.git('status', '--porcelain')).trim()).toBe('')
  })
})

describe('RepoTarget and lock files left by a killed git', () => {
  const processes: ChildProcess[] = []
  afterEach(() => {
    for (const p of processes.splice(0)) p.kill('SIGKILL')
  })

  it('removes a stale index.lock that no git owns, and commits', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' })
    const lock = path.join(repo.path, '.git', 'index.lock')
    writeFileSync(lock, '')
    const old = new Date(Date.now() - 60_000)
    utimesSync(lock, old, old)
    const target = new RepoTarget('repo', { path: repo.path })
    const e = effect('write_file', { path: 'a.txt', content: 'b\n' })
    const receipt = await target.apply(e, first)
    expect(existsSync(lock)).toBe(false)
    expect(await target.query(e)).toEqual(receipt)
  })

  it('leaves a stale ref lock no more stuck than an index lock', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' })
    const lock = path.join(repo.path, '.git', 'refs', 'heads', 'main.lock')
    writeFileSync(lock, '')
    const old = new Date(Date.now() - 60_000)
    utimesSync(lock, old, old)
    const target = new RepoTarget('repo', { path: repo.path })
    await target.apply(effect('write_file', { path: 'a.txt', content: 'b\n' }), first)
    expect(existsSync(lock)).toBe(false)
  })

  it('keeps a lock while a git process works in the repository, and asks to retry later', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' })
    const lock = path.join(repo.path, '.git', 'index.lock')
    writeFileSync(lock, '')
    const old = new Date(Date.now() - 60_000)
    utimesSync(lock, old, old)
    // A process named "git" whose working directory is the repository, as a live git's is.
    const bin = mkdtempSync(path.join(os.tmpdir(), 'interlock-bin-'))
    cleanups.push(() => rmSync(bin, { recursive: true, force: true }))
    symlinkSync('/bin/sleep', path.join(bin, 'git'))
    const liveGit = spawn(path.join(bin, 'git'), ['30'], { cwd: repo.path, stdio: 'ignore' })
    processes.push(liveGit)
    await new Promise((r) => liveGit.once('spawn', r))

    const target = new RepoTarget('repo', { path: repo.path })
    const e = effect('write_file', { path: 'a.txt', content: 'b\n' })
    const f = await fault(target.apply(e, first))
    expect(f.kind).toBe('retry-later')
    expect(f.retryAfterMs).toBeGreaterThan(0)
    expect(existsSync(lock)).toBe(true)
    expect(repo.read('a.txt')).toBe('a\n')

    liveGit.kill('SIGKILL')
    await new Promise((r) => liveGit.once('exit', r))
    await target.apply(e, { attempt: 2, recovering: false })
    expect(await target.query(e)).not.toBeNull()
  })

  it('recovers from a real git killed while holding index.lock', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n', 'b.txt': 'b\n' })
    repo.write('b.txt', 'a person\'s edit\n')
    // `git commit -a` holds index.lock while its editor is open; this editor never finishes.
    const person = spawn('git', ['-c', 'user.name=P', '-c', 'user.email=p@example.invalid', 'commit', '-a'], {
      cwd: repo.path,
      env: { ...process.env, GIT_EDITOR: 'sleep 60 #' },
      stdio: 'ignore',
      detached: true,
    })
    processes.push(person)
    const lock = path.join(repo.path, '.git', 'index.lock')
    for (let i = 0; i < 200 && !existsSync(lock); i++) await new Promise((r) => setTimeout(r, 25))
    expect(existsSync(lock)).toBe(true)

    const target = new RepoTarget('repo', { path: repo.path }, { staleLock: { minAgeMs: 0 } })
    const e = effect('write_file', { path: 'a.txt', content: 'agent\n' })
    expect((await fault(target.apply(e, first))).kind).toBe('retry-later')

    process.kill(-person.pid!, 'SIGKILL') // the whole group, as an OOM kill or a power cut would
    await new Promise((r) => (person.exitCode !== null || person.signalCode !== null ? r(null) : person.once('exit', r)))
    expect(existsSync(lock)).toBe(true)

    const receipt = await target.apply(e, { attempt: 2, recovering: false })
    expect(existsSync(lock)).toBe(false)
    expect(await target.query(e)).toEqual(receipt)
    expect((await repo.git('diff-tree', '--no-commit-id', '--name-only', '-r', String(receipt.commit))).trim()).toBe('a.txt')
  })

  it('does not remove a fresh lock: a git that just took it is working', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' })
    const lock = path.join(repo.path, '.git', 'index.lock')
    writeFileSync(lock, '')
    const target = new RepoTarget('repo', { path: repo.path }, { staleLock: { minAgeMs: 60_000 } })
    const f = await fault(target.apply(effect('write_file', { path: 'a.txt', content: 'b\n' }), first))
    expect(f.kind).toBe('retry-later')
    expect(existsSync(lock)).toBe(true)
  })
})
