/**
 * Edit distance for "did you mean" hints: insertions, deletions, substitutions
 * and swaps of two neighbouring characters, each one typo (optimal string
 * alignment). A swap is the commonest slip of the fingers (`--wiat`,
 * `stauts`); plain Levenshtein counts it as two and misses it on a short word.
 */
export function editDistance(a: string, b: string): number {
  // Three rows: the one before the previous is what a swap reaches back to.
  let before: number[] = []
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1)
      current.push(d)
    }
    before = previous
    previous = current
  }
  return previous[b.length]!
}
