/** Time as a port, so tests can hold it still or move it. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }
