/**
 * A contract case, and how cases are handed to a test runner. Cases are
 * plain objects so that the kit needs no runner: `run` throws when the
 * target breaks its contract. registerContract gives them to vitest's or
 * node:test's `it`, both of which take `it(name, { timeout }, fn)`.
 */
export interface ContractCase {
  name: string
  /** The case's time limit, for the runner. */
  timeoutMs: number
  run(): Promise<void>
}

export interface Runner {
  /** `it` (or `test`) of vitest or node:test. */
  it(name: string, options: { timeout: number }, fn: () => Promise<void>): unknown
  /** Given, the cases are grouped under `title`. */
  describe?(name: string, fn: () => void): unknown
  /** The group's title (default: "contract"). */
  title?: string
}

export function registerContract(cases: readonly ContractCase[], runner: Runner): void {
  // `run` alone, with no argument: node:test takes a function with two parameters as callback-style.
  const each = () => {
    for (const c of cases) runner.it(c.name, { timeout: c.timeoutMs }, () => c.run())
  }
  if (runner.describe) runner.describe(runner.title ?? 'contract', each)
  else each()
}
