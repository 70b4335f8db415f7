/**
 * A one-line progress bar for long work (STYLE habit 8), on stderr so stdout
 * stays the command's output. Only on a terminal: piped, redirected or under
 * cron it draws nothing, and the summary says the same thing once.
 */
export interface ProgressBar {
  update(done: number, total: number): void
  done(): void
}

const WIDTH = 30

export function progressBar(stream: NodeJS.WriteStream, label: string): ProgressBar | undefined {
  if (!stream.isTTY) return undefined
  let drawn = false
  return {
    update(done, total) {
      const filled = total === 0 ? WIDTH : Math.round((done / total) * WIDTH)
      stream.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${done}/${total}`)
      drawn = true
    },
    done() {
      if (drawn) stream.write('\n')
    },
  }
}
