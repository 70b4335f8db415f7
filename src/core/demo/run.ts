/**
 * `interlock demo`: the whole promise on the embedded default, end to end.
 *
 * 1. A temporary SQLite journal, a real git repository (tier 2) and a local
 *    HTTP service with an endpoint that honours Idempotency-Key (tier 1) and
 *    one that does not (tier 3).
 * 2. A scripted agent reads the repository (symbol premises), a teammate then
 *    edits one of the functions it read, and the agent's worker process submits
 *    four effects at once.
 * 3. The worker is paused right after each apply returns (before COMMITTED),
 *    and killed with SIGKILL once all of them are there.
 * 4. recover() runs; the report sets the journal beside the targets' own counts.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TargetConfig } from '../config/types.js'
import { CRASH_ENV, CRASH_MODE_ENV, PAUSED_PREFIX } from '../crash-points.js'
import { toEffect, type EffectInput, type Tier } from '../effect.js'
import { Gate } from '../gate.js'
import type { State } from '../lifecycle.js'
import type { RecoveryAction } from '../recovery.js'
import { openStore } from '../stores/open.js'
import { captureRepoPremises } from '../targets/repo/premises.js'
import { createTargets } from '../targets/registry.js'
import { startHttpService, type HttpService } from './http-service.js'
import { commitsFor, makeRepo, teammateEdit } from './scenario.js'
import type { WorkerPlan } from './worker.js'

export interface DemoRow {
  label: string
  effectId: string
  target: string
  tier: Tier
  /** States in the journal, oldest first. */
  journal: State[]
  recovery: RecoveryAction | '-'
  final: State
  /** Times the target itself recorded the effect as applied (service counts, git commits). */
  applied: number
  /** Requests the target received for it (tier 1 shows the deduplicated replay). */
  requests?: number
  expected: string
  ok: boolean
}

export interface DemoReport {
  dir: string
  kept: boolean
  workerKilledWith: string
  rows: DemoRow[]
  ok: boolean
}

export interface DemoOptions {
  keep?: boolean
  /** Progress lines for people. */
  log?: (line: string) => void
  timeoutMs?: number
}

export async function runDemo(opts: DemoOptions = {}): Promise<DemoReport> {
  const log = opts.log ?? (() => {})
  const dir = mkdtempSync(join(tmpdir(), 'interlock-demo-'))
  const repo = join(dir, 'repo')
  const journal = join(dir, 'journal.db')
  const service = await startHttpService()
  try {
    await makeRepo(repo)
    log(`journal  ${journal}`)
    log(`repo     ${repo}`)
    log(`service  ${service.url}`)

    const targets: Record<string, TargetConfig> = {
      payments: http(1, `${service.url}/idempotent`),
      notify: http(3, `${service.url}/plain`),
      repo: { type: 'repo', path: repo, branch: 'main', author: 'Interlock Demo <demo@example.invalid>' },
    }

    // The agent reads the pricing module before deciding: each decision rests on one function.
    const limitPremise = await captureRepoPremises(repo, [{ file: 'src/pricing.ts', symbol: 'refundLimit' }])
    const receiptPremise = await captureRepoPremises(repo, [{ file: 'src/pricing.ts', symbol: 'formatReceipt' }])
    const effects: WorkerPlan['effects'] = [
      { label: 'refund', thread: 'demo', target: 'payments', action: 'refund', args: { charge: 'ch_demo_1', amount: '25.00', currency: 'USD' } },
      {
        label: 'record refund',
        thread: 'demo',
        target: 'repo',
        action: 'write_file',
        args: { path: 'refunds/ch_demo_1.md', content: 'Refunded 25.00 USD (within refundLimit).\n', message: 'Record refund ch_demo_1' },
        premises: limitPremise,
      },
      { label: 'notify customer', thread: 'demo', target: 'notify', action: 'send', args: { to: 'customer@example.invalid', text: 'Your refund is on its way.' } },
      {
        label: 'stale receipt fix',
        thread: 'demo',
        target: 'repo',
        action: 'write_file',
        args: { path: 'receipts/template.txt', content: 'Refunded {amount} {currency}\n', message: 'Receipt template' },
        premises: receiptPremise,
      },
    ]
    // Meanwhile a teammate edits formatReceipt: the last decision is now stale; the
    // refund record still holds, since the edit is elsewhere in the same file.
    await teammateEdit(repo)
    log('teammate edited formatReceipt in src/pricing.ts after the agent read it')

    const plan: WorkerPlan = { journal, targets, effects }
    const planFile = join(dir, 'plan.json')
    writeFileSync(planFile, JSON.stringify(plan))
    const dispatched = effects.length - 1
    const killedWith = await runWorkerUntilPaused(planFile, dispatched, opts.timeoutMs ?? 60_000, log)
    log(`worker killed with ${killedWith} after ${dispatched} effects were applied and before any was COMMITTED`)

    const store = await openStore({ kind: 'sqlite', path: journal })
    const gate = new Gate({ store, targets: createTargets(targets).values() })
    const report = await gate.recover()
    log(`recover(): ${report.inFlight} effects in flight, ${report.recordsRead} journal records read`)

    const rows: DemoRow[] = []
    for (const e of effects) {
      const id = toEffect(e as EffectInput).id
      const history = await store.history(id)
      const recovered = report.effects.find((r) => r.effectId === id)
      const final = history.at(-1)!.state
      const tier = targets[e.target]!.type === 'repo' ? 2 : (targets[e.target] as { tier: Tier }).tier
      const row: DemoRow = {
        label: e.label,
        effectId: id,
        target: e.target,
        tier,
        journal: history.map((r) => r.state),
        recovery: recovered?.action ?? '-',
        final,
        applied: 0,
        expected: '',
        ok: false,
      }
      await countApplications(row, service, repo)
      judge(row)
      rows.push(row)
    }
    await gate.close()
    await store.close()
    return { dir, kept: Boolean(opts.keep), workerKilledWith: killedWith, rows, ok: rows.every((r) => r.ok) }
  } finally {
    await service.close()
    if (!opts.keep) rmSync(dir, { recursive: true, force: true })
  }
}

function http(tier: Tier, url: string): TargetConfig {
  return { type: 'http', tier, url, method: 'POST', headers: {}, timeoutMs: 5000, connectTimeoutMs: 2000 }
}

async function countApplications(row: DemoRow, service: HttpService, repo: string): Promise<void> {
  if (row.target === 'repo') {
    row.applied = await commitsFor(repo, row.effectId)
    return
  }
  const path = row.target === 'payments' ? '/idempotent' : '/plain'
  const counts = service.counts()
  row.applied = (path === '/idempotent' ? counts.idempotent : counts.plain)[row.effectId] ?? 0
  row.requests = service.requests().filter((r) => r.path === path && (r.idempotencyKey ?? r.effectId) === row.effectId).length
}

/** What the promise says must be true of each row. */
function judge(row: DemoRow): void {
  if (row.label === 'stale receipt fix') {
    row.expected = 'REJECTED, never applied'
    row.ok = row.final === 'REJECTED' && row.applied === 0
  } else if (row.tier === 1) {
    row.expected = 're-applied with the same key, applied once'
    row.ok = row.final === 'COMMITTED' && row.recovery === 're-applied' && row.applied === 1
  } else if (row.tier === 2) {
    row.expected = 'found by query, applied once'
    row.ok = row.final === 'COMMITTED' && row.recovery === 'found-by-query' && row.applied === 1
  } else {
    row.expected = 'AMBIGUOUS, applied at most once'
    row.ok = row.final === 'AMBIGUOUS' && row.applied <= 1
  }
}

/**
 * Runs the worker with `after-apply` armed in pause mode, and SIGKILLs it once
 * `expected` effects have paused there (applied, COMMITTED not yet written).
 */
function runWorkerUntilPaused(planFile: string, expected: number, timeoutMs: number, log: (l: string) => void): Promise<string> {
  const worker = fileURLToPath(new URL(`./worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url))
  const child = spawn(process.execPath, [...process.execArgv, worker, planFile], {
    env: { ...process.env, [CRASH_ENV]: 'after-apply', [CRASH_MODE_ENV]: 'pause' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return new Promise((resolve, reject) => {
    let paused = 0
    let stderr = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the demo worker did not reach its crash point within ${timeoutMs} ms:\n${stderr}`))
    }, timeoutMs)
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) {
        try {
          const { label, outcome } = JSON.parse(line) as { label: string; outcome: { status: string } }
          log(`worker: ${label} → ${outcome.status}`)
        } catch {
          stderr += line
        }
      }
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) {
        if (!line.startsWith(PAUSED_PREFIX)) {
          stderr += `${line}\n`
          continue
        }
        paused++
        if (paused === expected) child.kill('SIGKILL')
      }
    })
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      if (signal === 'SIGKILL' && paused === expected) resolve('SIGKILL')
      else reject(new Error(`the demo worker exited (${signal ?? code}) before its effects were in flight:\n${stderr}`))
    })
  })
}
