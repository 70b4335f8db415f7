/**
 * Waits until what was written to stdout and stderr has left the process.
 *
 * On a pipe, Node writes asynchronously: whatever the reader has not taken
 * yet waits in the process's memory, and `process.exit` (which oclif calls
 * for every failing command) drops it. A 5 MB `--json` error envelope, or a
 * config with thousands of problems, came out cut at 64 KiB, mid-line, and
 * the JSON did not parse. So a command that fails waits here first. A
 * successful command ends without `process.exit`, and Node keeps the process
 * alive until its pending writes are done.
 *
 * A reader that went away (EPIPE) ends the wait too: nothing more can be
 * delivered.
 */
export async function drained(...streams: NodeJS.WritableStream[]): Promise<void> {
  await Promise.all(streams.map(drainOne))
}

function drainOne(stream: NodeJS.WritableStream): Promise<void> {
  const s = stream as NodeJS.WritableStream & { writableLength?: number; destroyed?: boolean }
  if (s.destroyed || !s.writableLength) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      s.off('error', done)
      s.off('close', done)
      resolve()
    }
    s.once('error', done)
    s.once('close', done)
    // Callbacks run in write order: this one runs once everything before it was handed to the OS.
    s.write('', () => done())
  })
}
