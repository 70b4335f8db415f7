import { afterEach, describe, expect, it } from 'vitest'
import { toEffect } from '../../../src/core/effect.js'
import { InputError } from '../../../src/core/errors.js'
import { captureRepoPremises, gitBlobHash, RepoTarget, validateRepoPremises } from '../../../src/core/targets/repo/index.js'
import { tempRepo, type TempRepo } from '../../helpers/git-repo.js'

const BILLING = `import { db } from './db'

/** How much may be refunded. */
export function refundLimit(plan: string): number {
  return plan === 'pro' ? 500 : 100
}

export function formatReceipt(amount: string): string {
  return \`Refunded \${amount}\`
}

export class Billing {
  charge(amount: number): number {
    return amount * 2
  }

  refund(amount: number): number {
    function clamp(n: number): number {
      return Math.max(0, n)
    }
    return clamp(amount)
  }
}

export const notify = async (who: string) => {
  return db.send(who)
}

export const api = {
  cancel(id: string) {
    return id
  },
}
`

const repos: TempRepo[] = []
afterEach(() => {
  for (const r of repos.splice(0)) r.cleanup()
})

async function billingRepo(): Promise<TempRepo> {
  const r = await tempRepo({ 'src/billing.ts': BILLING, 'src/other.ts': 'export const x = 1\n' })
  repos.push(r)
  return r
}

const FILE = { file: 'src/billing.ts' }
const sym = (symbol: string) => ({ file: 'src/billing.ts', symbol })

describe('repo premises at file and symbol precision', () => {
  it('captures the git blob hash, as git hash-object computes it', async () => {
    const repo = await billingRepo()
    const premises = await captureRepoPremises(repo.path, [FILE])
    const gitSays = (await repo.git('hash-object', 'src/billing.ts')).trim()
    expect(premises).toEqual({ files: { 'src/billing.ts': gitSays } })
    expect(gitBlobHash(Buffer.from(BILLING))).toBe(gitSays)
  })

  it('an unrelated edit elsewhere in the file fails the file premise but not the symbol premise', async () => {
    const repo = await billingRepo()
    const premises = await captureRepoPremises(repo.path, [FILE, sym('refundLimit')])
    await repo.commit({ 'src/billing.ts': BILLING.replace('`Refunded ${amount}`', '`Refund of ${amount} issued`') })

    const violations = await validateRepoPremises(repo.path, premises)
    expect(violations).toHaveLength(1)
    expect(violations[0]).toMatch(/^src\/billing\.ts changed since the decision \(was [0-9a-f]{12}…, now [0-9a-f]{12}…\)$/)
    expect(await validateRepoPremises(repo.path, await captureRepoPremises(repo.path, [sym('refundLimit')]))).toEqual([])
  })

  it('an edit inside the symbol fails both', async () => {
    const repo = await billingRepo()
    const premises = await captureRepoPremises(repo.path, [FILE, sym('refundLimit')])
    repo.write('src/billing.ts', BILLING.replace("'pro' ? 500", "'pro' ? 1000"))

    const violations = await validateRepoPremises(repo.path, premises)
    expect(violations).toHaveLength(2)
    expect(violations[0]).toMatch(/^src\/billing\.ts changed since the decision/)
    expect(violations[1]).toMatch(/^src\/billing\.ts#refundLimit changed since the decision \(was [0-9a-f]{12}…, now [0-9a-f]{12}…\)$/)
  })

  it('a deleted file fails both, naming the file and the symbol', async () => {
    const repo = await billingRepo()
    const premises = await captureRepoPremises(repo.path, [FILE, sym('refundLimit'), 'src/other.ts'])
    await repo.git('rm', '-q', 'src/billing.ts')
    expect(await validateRepoPremises(repo.path, premises)).toEqual([
      'src/billing.ts was deleted',
      'src/billing.ts#refundLimit no longer exists (src/billing.ts was deleted)',
    ])
  })

  it('a renamed or removed symbol is a violation naming it', async () => {
    const repo = await billingRepo()
    const premises = await captureRepoPremises(repo.path, [sym('refundLimit'), sym('Billing.charge'), sym('formatReceipt')])
    repo.write('src/billing.ts', BILLING.replace('function refundLimit', 'function maxRefund').replace('  charge(amount', '  bill(amount'))
    expect(await validateRepoPremises(repo.path, premises)).toEqual([
      'src/billing.ts#Billing.charge no longer exists (renamed or removed since the decision)',
      'src/billing.ts#refundLimit no longer exists (renamed or removed since the decision)',
    ])
  })

  it('finds a class method by dotted path: an edit in a sibling method passes, an edit in the method fails', async () => {
    const repo = await billingRepo()
    const premises = await captureRepoPremises(repo.path, [sym('Billing.charge')])
    repo.write('src/billing.ts', BILLING.replace('return clamp(amount)', 'return clamp(amount - 1)'))
    expect(await validateRepoPremises(repo.path, premises)).toEqual([])
    repo.write('src/billing.ts', BILLING.replace('amount * 2', 'amount * 3'))
    expect(await validateRepoPremises(repo.path, premises)).toEqual([
      expect.stringMatching(/^src\/billing\.ts#Billing\.charge changed since the decision/),
    ])
  })

  it('reads arrow functions in variables, object-literal members and nested functions', async () => {
    const repo = await billingRepo()
    const premises = await captureRepoPremises(repo.path, ['src/billing.ts#notify', 'src/billing.ts#api.cancel', 'src/billing.ts#Billing.refund.clamp'])
    expect(Object.keys((premises.symbols as Record<string, object>)['src/billing.ts']!).sort()).toEqual(['Billing.refund.clamp', 'api.cancel', 'notify'])
    repo.write('src/billing.ts', BILLING.replace('Math.max(0, n)', 'Math.max(1, n)').replace('db.send(who)', 'db.send(who, 1)'))
    const violations = await validateRepoPremises(repo.path, premises)
    expect(violations.map((v) => v.split(' ')[0])).toEqual(['src/billing.ts#Billing.refund.clamp', 'src/billing.ts#notify'])
  })

  it('a doc comment above the symbol is not part of it; its signature is', async () => {
    const repo = await billingRepo()
    const premises = await captureRepoPremises(repo.path, [sym('refundLimit')])
    repo.write('src/billing.ts', BILLING.replace('How much may be refunded.', 'The refund ceiling.'))
    expect(await validateRepoPremises(repo.path, premises)).toEqual([])
    repo.write('src/billing.ts', BILLING.replace('export function refundLimit', 'function refundLimit'))
    expect(await validateRepoPremises(repo.path, premises)).toHaveLength(1)
  })

  it('reads .tsx and .js files too', async () => {
    const repo = await tempRepo({ 'ui/App.tsx': 'export function App() {\n  return <div>hi</div>\n}\n', 'lib/x.mjs': 'export const f = () => 1\n' })
    repos.push(repo)
    const premises = await captureRepoPremises(repo.path, ['ui/App.tsx#App', 'lib/x.mjs#f'])
    repo.write('ui/App.tsx', 'export function App() {\n  return <div>bye</div>\n}\n')
    expect(await validateRepoPremises(repo.path, premises)).toEqual([expect.stringMatching(/^ui\/App\.tsx#App changed/)])
  })

  it('refuses to capture what it cannot read, naming it', async () => {
    const repo = await billingRepo()
    await expect(captureRepoPremises(repo.path, [sym('nope')])).rejects.toThrow(/src\/billing\.ts#nope: no function, class, method or variable nope/)
    await expect(captureRepoPremises(repo.path, [{ file: 'README.md', symbol: 'x' }])).rejects.toThrow(InputError)
    await expect(captureRepoPremises(repo.path, [{ file: 'src/missing.ts', symbol: 'x' }])).rejects.toThrow(/src\/missing\.ts does not exist/)
    await expect(captureRepoPremises(repo.path, ['../outside.ts'])).rejects.toThrow(/"..\/outside.ts" leaves the repository/)
  })

  it('premises a new file on its absence: someone creating it first is a violation', async () => {
    const repo = await billingRepo()
    const target = new RepoTarget('repo', { path: repo.path })
    const premises = await target.capture('write_file', { path: 'src/new.ts', content: 'x' })
    expect(premises).toEqual({ files: { 'src/new.ts': null } })
    const e = toEffect({ thread: 't', target: 'repo', action: 'write_file', args: { path: 'src/new.ts', content: 'x' }, premises })
    expect(await target.validatePremises(e)).toEqual([])
    repo.write('src/new.ts', 'someone else\n')
    expect(await target.validatePremises(e)).toEqual([expect.stringMatching(/^src\/new\.ts was created since the decision/)])
  })

  it('capture reads rests_on when given, else the touched file', async () => {
    const repo = await billingRepo()
    const target = new RepoTarget('repo', { path: repo.path })
    const args = { path: 'src/other.ts', content: 'export const x = 2\n', rests_on: ['src/billing.ts#Billing.charge'] }
    const premises = await target.capture('write_file', args)
    expect(Object.keys(premises)).toEqual(['symbols'])
    const e = toEffect({ thread: 't', target: 'repo', action: 'write_file', args, premises })
    repo.write('src/billing.ts', BILLING.replace('amount * 2', 'amount * 4'))
    expect(await target.validatePremises(e)).toEqual([expect.stringContaining('src/billing.ts#Billing.charge changed')])
  })

  it('malformed premises are violations, not crashes', async () => {
    const repo = await billingRepo()
    expect(
      await validateRepoPremises(repo.path, { files: { 'src/billing.ts': 3 }, symbols: 'x', other: { kept: true } } as never),
    ).toEqual(['premises.files["src/billing.ts"] must be a blob hash or null', 'premises.symbols must map paths to { symbol: hash }'])
    expect(await validateRepoPremises(repo.path, { files: { '../x': 'abc' } })).toEqual([
      expect.stringMatching(/^premise on "..\/x" cannot be checked: path "..\/x" leaves the repository/),
    ])
  })
})
