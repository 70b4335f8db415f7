/**
 * Who is calling through the proxy: the identity every journaled call is
 * recorded with, and the scope its threads, caller keys, joins and replays
 * are kept in, so one caller can never join, read or replay another's
 * effects. Over stdio it is the local OS user the proxy runs as (whoever
 * can write to its stdin is that user); over HTTP it is what the request's
 * credentials prove: a static bearer token's named principal, or an OAuth
 * access token's subject.
 */
import { userInfo } from 'node:os'

export interface Principal {
  /** Stable name, journaled with each effect: `user:<login>`, `token:<name>`, `oauth:<iss>#<sub>`. */
  id: string
  /** How it was established. */
  via: 'os-user' | 'bearer' | 'oauth' | 'none'
  /** OAuth scopes granted, when the token carries any. */
  scopes?: readonly string[]
}

/** The stdio proxy's caller: the OS user it runs as. */
export function osUserPrincipal(): Principal {
  let login: string
  try {
    login = userInfo().username
  } catch {
    login = process.env.USER ?? process.env.LOGNAME ?? `uid-${process.getuid?.() ?? 'unknown'}`
  }
  return { id: `user:${login}`, via: 'os-user' }
}

/** An HTTP caller on a loopback proxy whose operator turned authentication off by the flag that says so. */
export const UNAUTHENTICATED: Principal = { id: 'anonymous', via: 'none' }
