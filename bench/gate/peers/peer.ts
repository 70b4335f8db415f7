/** One system in the comparison: `one()` is one durable no-op step, awaited to its end. */
export interface Peer {
  name: string
  one(): Promise<void>
  close(): Promise<void>
}
