/** cors ships no types; the conformance suite's reference server (test/fixtures/mcp-conformance) uses its middleware factory. */
declare module 'cors' {
  import type { RequestHandler } from 'express'
  interface CorsOptions {
    origin?: boolean | string | RegExp | (string | RegExp)[]
    exposedHeaders?: string | string[]
    allowedHeaders?: string | string[]
    [option: string]: unknown
  }
  export default function cors(options?: CorsOptions): RequestHandler
}
