/** Small pieces every page uses: states as text, ids, ages, and the CLI command an action stands for. */
import type { State } from '../../core/lifecycle.js'
import { html, type Html } from './html.js'

/** The state as a word, always: colour only repeats it (readable without colour). */
export function stateBadge(state: State): Html {
  return html`<span class="state state-${state.toLowerCase()}">${state}</span>`
}

export function shortId(id: string): string {
  return `${id.slice(0, 12)}…`
}

export function effectLink(id: string): Html {
  return html`<a href="/effects/${id}" class="id" title="${id}">${shortId(id)}</a>`
}

export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 120) return `${s} s ago`
  if (s < 7200) return `${Math.round(s / 60)} min ago`
  if (s < 172_800) return `${Math.round(s / 3600)} h ago`
  return `${Math.round(s / 86_400)} d ago`
}

/** The flags the console was started with that an equivalent CLI command needs too. */
export interface CliFlags {
  key?: string
  passphraseEnv?: string
  config?: string
}

/** `interlock <args…>` with the console's --key, --passphrase-env and --config, quoted for a POSIX shell. */
export function cliCommand(args: readonly string[], flags: CliFlags): string {
  const all = [...args]
  if (flags.key) all.push('--key', flags.key)
  if (flags.passphraseEnv) all.push('--passphrase-env', flags.passphraseEnv)
  if (flags.config) all.push('--config', flags.config)
  return ['interlock', ...all.map(shellWord)].join(' ')
}

function shellWord(word: string): string {
  return /^[A-Za-z0-9_\-./:=@,+%]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}

/** JSON for people: indented, one key a line. */
export function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2)
}
