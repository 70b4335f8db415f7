/**
 * Streams a command's own output (an export, not a log line) to stdout,
 * waiting on the pipe like any writer of a large file, and finishing only
 * when all of it has left the process (cli/drain.ts says why that matters).
 * A reader that goes away (`| head`) ends the writing with an error that says so
 * instead of an unhandled 'error' event.
 */
import { ExitCode, InterlockError } from '../core/errors.js'
import { drained } from './drain.js'

export async function writeToStdout<T>(write: (out: NodeJS.WritableStream) => Promise<T>): Promise<T> {
  let broken: Error | undefined
  const onError = (e: Error) => {
    broken = e
  }
  process.stdout.on('error', onError)
  try {
    const result = await write(process.stdout)
    await drained(process.stdout)
    if (broken) throw closedEarly(broken)
    return result
  } catch (e) {
    throw broken ? closedEarly(broken) : e
  } finally {
    process.stdout.off('error', onError)
  }
}

function closedEarly(cause: Error): InterlockError {
  return new InterlockError('E_STDOUT_CLOSED', ExitCode.FAILURE, `stdout was closed before everything was written (${cause.message})`, {
    hint: 'Whatever read the output stopped early; write to a file with --out <file> instead.',
    cause,
  })
}
