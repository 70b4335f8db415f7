/**
 * Secrets for tests that must never see them again, and the ways to look for
 * them: every spelling a secret takes on the way back from a service (written
 * out here independently of src/core/secrets/matcher.ts, so a bug there does
 * not hide itself), and every row of every table of a store.
 *
 * Each secret starts with a marker that no hash, signature or id can contain
 * (`~` is neither hex nor base64url), so a secret cut in two still shows.
 */
import Database from 'better-sqlite3'
import pg from 'pg'
import type { StoreConfig } from '../../src/core/config/types.js'
import { quoteSchema } from '../../src/core/stores/postgres/identifier.js'

/** In URL paths and queries: `"`, `\`, a space, `<>{}|^'@:$!*(),;` and a non-ASCII letter. */
export const HOOK_TOKEN = `hk~"quo\\te <x>{y}|^'@:$!*(),;ü_9Z`
/** In a header: `"`, `\`, `'`, `<>{}` and `#`. */
export const API_TOKEN = `ak~"x\\y'z<w>{v}#1`
export const SECRET_ENV = { HOOK_TOKEN, API_TOKEN }

/**
 * An interlock.toml table for a webhook target on the echo service
 * (echo-service.ts) that takes both secrets from the environment: its URL's
 * path and query carry `${HOOK_TOKEN}`, its header `${API_TOKEN}`, and its
 * premise read sends the token and has it said back.
 * @param path what the echo service does with the send: '/anything' says it back, '' answers 404 quoting the URL, '/fail/500' fails quoting it
 */
export function secretHookToml(name: string, echoUrl: string, path = '/anything'): string {
  return `[targets.${name}]
type = "http"
tier = 3
url = "${echoUrl}${path}/hooks/\${HOOK_TOKEN}?sig=\${HOOK_TOKEN}"
premise_url = "${echoUrl}/anything/resource?token=\${HOOK_TOKEN}"
headers = { Authorization = "Bearer \${API_TOKEN}" }
timeout_ms = 3000
`
}

function spellingsOf(s: string): string[] {
  const json = JSON.stringify(s).slice(1, -1)
  const html = (t: string) => t.replace(/["'&<>]/g, (c) => ({ '"': '&quot;', "'": '&#39;', '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!)
  const path = new URL(`http://h/${s}`).pathname.slice(1)
  const query = new URL(`http://h/?q=${s}`).search.slice(3)
  return [...new Set([s, json, JSON.stringify(json).slice(1, -1), encodeURIComponent(s), encodeURI(s), path, query, html(path), html(query), html(s)])]
}

const MARKERS = ['hk~', 'ak~', 'hk%7E', 'ak%7E', 'hk%7e', 'ak%7e']

/** What in `text` gives a secret away: a whole secret in some spelling, or the marker of a piece of one. */
export function leaks(text: string, secrets: readonly string[] = [HOOK_TOKEN, API_TOKEN]): string[] {
  const found = secrets.flatMap(spellingsOf).filter((form) => text.includes(form))
  for (const m of MARKERS) if (text.includes(m)) found.push(`marker ${m}`)
  return found
}

/** Fails naming the channel and showing the text around the first leak. */
export function expectNoLeak(channel: string, text: string): void {
  const found = leaks(text)
  if (found.length > 0) {
    const at = Math.max(0, Math.min(...found.map((f) => text.indexOf(f.startsWith('marker ') ? f.slice(7) : f)).filter((i) => i >= 0)) - 120)
    throw new Error(`${channel} gives a secret away (${found.length} spellings); around it:\n${text.slice(at, at + 400)}`)
  }
}

/** Every row of every table of the store, as text: what anyone reading the database sees. */
export async function dumpStore(config: StoreConfig): Promise<string> {
  if (config.kind === 'sqlite') {
    const db = new Database(config.path, { readonly: true })
    try {
      const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name)
      return tables.map((t) => `${t}\n${JSON.stringify(db.prepare(`SELECT * FROM "${t}"`).all())}`).join('\n')
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({ connectionString: config.url })
  await client.connect()
  try {
    const schema = config.schema ?? 'interlock'
    const tables = (await client.query('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [schema])).rows.map((r: { table_name: string }) => r.table_name)
    const out: string[] = []
    for (const t of tables) {
      const rows = await client.query(`SELECT row_to_json(x)::text AS j FROM ${quoteSchema(schema)}."${t}" x`)
      out.push(`${t}\n${rows.rows.map((r: { j: string }) => r.j).join('\n')}`)
    }
    return out.join('\n')
  } finally {
    await client.end()
  }
}
