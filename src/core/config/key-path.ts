/** A TOML dotted key: bare where TOML allows it, quoted otherwise. */
export function tomlKeyPath(segments: readonly string[]): string {
  return segments.map((s) => (/^[A-Za-z0-9_-]+$/.test(s) ? s : JSON.stringify(s))).join('.')
}
