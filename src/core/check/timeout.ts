/**
 * Every probe runs under its own deadline, so one service that never answers
 * costs one timeout, not the whole run (they run concurrently). The probe is
 * told through its AbortSignal; the race guarantees an answer even from a
 * probe that ignores the signal.
 */
export class ProbeTimeout extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`)
    this.name = 'ProbeTimeout'
  }
}

export async function withTimeout<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(new ProbeTimeout(ms))
      reject(new ProbeTimeout(ms))
    }, ms)
  })
  try {
    return await Promise.race([work(controller.signal), deadline])
  } finally {
    clearTimeout(timer)
  }
}

