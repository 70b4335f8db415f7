/**
 * The local scenario's git repository: a small pricing module an agent reads
 * before deciding, and a teammate who edits one function of it afterwards.
 */
import { execFile } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export const PRICING_V1 = `export function refundLimit(plan: string): number {
  return plan === 'pro' ? 500 : 100
}

export function formatReceipt(amount: string, currency: string): string {
  return \`Refunded \${amount} \${currency}\`
}
`

/** A teammate's later commit: it changes formatReceipt only. */
export const PRICING_V2 = PRICING_V1.replace('`Refunded ${amount} ${currency}`', '`Refund of ${amount} ${currency} issued`')

const GIT_ID = ['-c', 'user.name=Demo Teammate', '-c', 'user.email=teammate@example.invalid', '-c', 'commit.gpgsign=false']

async function git(repo: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', [...GIT_ID, ...args], { cwd: repo })
  return stdout
}

export async function makeRepo(repo: string): Promise<void> {
  mkdirSync(join(repo, 'src'), { recursive: true })
  await git(repo, 'init', '-q', '-b', 'main')
  writeFileSync(join(repo, 'src/pricing.ts'), PRICING_V1)
  await git(repo, 'add', '-A')
  await git(repo, 'commit', '-q', '-m', 'pricing module')
}

export async function teammateEdit(repo: string): Promise<void> {
  writeFileSync(join(repo, 'src/pricing.ts'), PRICING_V2)
  await git(repo, 'commit', '-q', '-am', 'reword receipts')
}

/** Commits on main whose Interlock-Effect trailer names this effect: the repository's own record. */
export async function commitsFor(repo: string, effectId: string): Promise<number> {
  const out = await git(repo, 'log', 'main', '--format=%(trailers:key=Interlock-Effect,valueonly)')
  return out.split('\n').filter((l) => l.trim() === effectId).length
}
