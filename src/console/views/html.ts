/**
 * HTML built from tagged templates: every interpolated value is escaped
 * unless it is Html made the same way, so nothing read from the journal
 * (args, reasons, names an agent chose) can become markup in an operator's
 * browser.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[]

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!
  return new Html(out)
}

function render(v: Part): string {
  if (v instanceof Html) return v.text
  if (Array.isArray(v)) return v.map(render).join('')
  if (v === null || v === undefined || v === false) return ''
  return escapeHtml(String(v))
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)
}

/** A path with query parameters, each encoded; empty values left out. */
export function href(path: string, params: Record<string, string | number | readonly string[] | undefined> = {}): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === '') continue
    for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one))
  }
  const text = q.toString()
  return text ? `${path}?${text}` : path
}
