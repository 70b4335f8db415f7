/**
 * URL templates: `{effect_id}`, `{action}` and `{args.NAME}` (a top-level
 * string, number or boolean argument), each URL-encoded as one path segment or
 * query value. Other braces are left as they are.
 */
import type { JsonObject } from '../../canonical-json.js'
import { InputError } from '../../errors.js'

const PLACEHOLDER = /\{(effect_id|action|args\.[A-Za-z0-9_-]+)\}/g

export interface TemplateVars {
  effect_id?: string
  action?: string
  args?: JsonObject
}

export function placeholdersOf(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!)
}

export function expandUrl(template: string, vars: TemplateVars): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    let value: unknown
    if (name === 'effect_id') value = vars.effect_id
    else if (name === 'action') value = vars.action
    else value = vars.args?.[name.slice('args.'.length)]
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new InputError(`the URL template needs {${name}}, and ${value === undefined ? 'there is none here' : 'it is not a string, number or boolean'}`)
    }
    return encodeURIComponent(String(value))
  })
}
