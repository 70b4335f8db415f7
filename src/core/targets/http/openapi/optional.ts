/**
 * Which optional parameters and body properties a generated action sends.
 *
 * An http target's template sends what it names, and a call that lacks an
 * argument a template names is refused (templates have no "leave it out
 * when absent"). So an optional parameter written into the template would
 * become one every call must pass. By default only required ones are
 * written, the optional ones are listed in a comment, and `--include NAME`
 * (or `--include all`) writes them too.
 */
import { UsageError } from '../../../errors.js'

export class OptionalChoice {
  /** Every optional name the operations offer. */
  readonly offered = new Set<string>()
  private readonly asked: Set<string>
  private readonly all: boolean

  constructor(include: readonly string[] = []) {
    const names = include.flatMap((i) => i.split(',')).map((i) => i.trim()).filter(Boolean)
    this.all = names.includes('all')
    this.asked = new Set(names.filter((n) => n !== 'all'))
  }

  /** Whether an optional parameter or property `name` is sent. */
  wants(name: string): boolean {
    this.offered.add(name)
    return this.all || this.asked.has(name)
  }

  /** Names asked for that no operation offers: a typo, said rather than ignored. */
  assertAllOffered(operations: readonly string[]): void {
    const unknown = [...this.asked].filter((n) => !this.offered.has(n))
    if (unknown.length === 0) return
    const offered = [...this.offered]
    const which = operations.length === 1 ? `operation ${operations[0]} has no` : `none of the operations ${operations.join(', ')} has an`
    throw new UsageError(
      `--include ${unknown.join(', ')}: ${which} optional parameter or body property of that name`,
      { hint: offered.length > 0 ? `Its optional ones: ${offered.join(', ')} (or --include all).` : 'It has no optional parameters or body properties.' },
    )
  }
}

/** What was not sent, by where it is: "query parameters: a, b". */
export class NotSent {
  private readonly by = new Map<string, string[]>()

  add(place: string, name: string): void {
    this.by.set(place, [...(this.by.get(place) ?? []), name])
  }

  get empty(): boolean {
    return this.by.size === 0
  }

  lines(): string[] {
    return [...this.by].map(([place, names]) => `${place}: ${names.join(', ')}`)
  }
}
