/**
 * bench/verify: how fast `outbox verify` reads a store, in records per
 * second, over 1,000,000 journal records (issue 25: before and after seals).
 *
 * The store is bench/recovery's dataset (dataset.ts, build.ts) in a SQLite
 * file: 1,000 agent journals of effects driven by a relay exactly as the
 * relay writes them, plus effects left open (DISPATCHED, HELD, AMBIGUOUS...),
 * in each `--forms` form: `seals` (as relays write now: one seal per relay
 * commit of a group of effects, crypto/seal.ts) and `records` (as they
 * wrote before: every record past PROPOSED signed by the relay's signer,
 * relay-signer.ts, COMMITTED records with a signed receipt). Built once per
 * plan and kept with `--data <dir>`.
 *
 * Timed, `--times` times each (every run and the median printed, with the
 * machine's load):
 * - core: verifyStore() in this process, what the CLI command calls, the
 *   relay's key trusted (so every record signature and receipt is checked);
 * - cli: the built `interlock outbox verify --relay-key ...` on the same file,
 *   start-up included (after `npm run build`; skipped without dist/).
 *
 *   npx tsx bench/verify/run.ts [--records 1000000] [--journals 1000] [--in-flight 1000] [--forms seals,records] [--data <dir>] [--times 3] [--no-cli]
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { verifyStore } from '../../src/core/outbox/verify-sources.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { openStore } from '../../src/core/stores/open.js'
import { sqliteDataset } from '../recovery/build.js'
import { RELAY, RULE } from '../recovery/dataset.js'
import { OPERATORS } from '../recovery/measure.js'

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    journals: { type: 'string', default: '1000' },
    'in-flight': { type: 'string', default: '1000' },
    data: { type: 'string' },
    times: { type: 'string', default: '3' },
    'no-cli': { type: 'boolean', default: false },
    forms: { type: 'string', default: 'seals,records' },
  },
})
const forms = values.forms.split(',') as ('seals' | 'records')[]
const times = Number(values.times)
const scratch = mkdtempSync(join(tmpdir(), 'interlock-bench-verify-'))
const dataDir = values.data ? resolve(values.data) : join(scratch, 'data')
const log = (s: string) => process.stderr.write(`${s}\n`)
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const rates = new Map<string, number>()
try {
  for (const form of forms) await bench(form)
  if (rates.has('seals') && rates.has('records')) console.log(`\noutbox verify, seals ÷ per-record signatures (core): ${(rates.get('seals')! / rates.get('records')!).toFixed(2)} ×`)
} finally {
  rmSync(scratch, { recursive: true, force: true })
}

async function bench(form: 'seals' | 'records'): Promise<void> {
  const plan = { records: Number(values.records), journals: Number(values.journals), inFlight: Number(values['in-flight']), form }
  log(`bench/verify (${form}): ${plan.records.toLocaleString('en')} records, ${plan.journals} journals, ${plan.inFlight} in flight; load ${load()}`)
  const { file, meta } = await sqliteDataset(join(dataDir, form), plan, log)
  const relays = [{ name: RELAY, publicKey: meta.relayPublicKey }]
  const policy = new RulesPolicy([RULE])
  const lines: string[] = []

  const core: number[] = []
  for (let i = 0; i < times; i++) {
    const loadAt = load()
    const store = await openStore({ kind: 'sqlite', path: file })
    try {
      const t0 = performance.now()
      const report = await verifyStore(store, { operators: OPERATORS, relays, policy })
      const ms = performance.now() - t0
      if (!report.ok) throw new Error(`the dataset does not verify: ${report.problems.length} problems, the first: ${report.firstBad?.message}`)
      if (report.records !== meta.records) throw new Error(`verify read ${report.records} records, the store holds ${meta.records}`)
      if (report.writers.valid === 0) throw new Error('no record signature was checked')
      core.push(ms)
      lines.push(
        `core run ${i + 1}: ${(ms / 1000).toFixed(2)} s, ${Math.round(meta.records / (ms / 1000)).toLocaleString('en')} records/s ` +
          `(${report.writers.valid.toLocaleString('en')} records covered, ${report.writers.sealed.toLocaleString('en')} of them by ${report.seals.valid.toLocaleString('en')} seals; ${report.receipts.valid.toLocaleString('en')} receipts verified), load ${loadAt}`,
      )
      log(lines.at(-1)!)
    } finally {
      await store.close()
    }
  }

  const cli: number[] = []
  const bin = resolve('bin/run.js')
  if (!values['no-cli'] && existsSync(resolve('dist/commands/outbox/verify.js'))) {
    const dir = join(scratch, `cli-${form}`)
    execFileSync('mkdir', ['-p', dir])
    writeFileSync(join(dir, 'interlock.toml'), `[store]\npath = ${JSON.stringify(file)}\n\n[[operators]]\nname = "${OPERATORS[0]!.name}"\npublic_key = "${OPERATORS[0]!.publicKey}"\n\n${policyToml()}`)
    for (let i = 0; i < times; i++) {
      const loadAt = load()
      const t0 = performance.now()
      execFileSync(process.execPath, [bin, 'outbox', 'verify', '--relay-key', `${RELAY}=${meta.relayPublicKey}`], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] })
      const ms = performance.now() - t0
      cli.push(ms)
      lines.push(`cli  run ${i + 1}: ${(ms / 1000).toFixed(2)} s, ${Math.round(meta.records / (ms / 1000)).toLocaleString('en')} records/s, load ${loadAt}`)
      log(lines.at(-1)!)
    }
  }

  console.log(`\nbench/verify (${form}): ${meta.records.toLocaleString('en')} records in ${plan.journals} journals, ${meta.effects.toLocaleString('en')} effects (SQLite, ${file})`)
  for (const line of lines) console.log(line)
  const rate = Math.round(meta.records / (median(core) / 1000))
  rates.set(form, rate)
  console.log(`outbox verify (${form}), core (median of ${times}): ${rate.toLocaleString('en')} records/s`)
  if (cli.length > 0) console.log(`outbox verify (${form}), CLI (median of ${times}, start-up included): ${Math.round(meta.records / (median(cli) / 1000)).toLocaleString('en')} records/s`)
}

/** The dataset's policy as interlock.toml writes it. */
function policyToml(): string {
  const w = RULE.when[0]!
  return `[[policy.rules]]\nname = "${RULE.name}"\ntarget = "${RULE.target}"\nwhen = [{ arg = "${w.arg}", above = "${w.above}", currency = "${w.currency}" }]\nquorum = ${RULE.quorum}\nrelease_ttl = "${RULE.releaseTtlMs / 1000}s"\n`
}
