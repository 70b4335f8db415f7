/** Row constructors: the family is read from the id, so the two cannot disagree. */
import type { CheckRow } from './types.js'

export function pass(id: string, name: string, detail: string): CheckRow {
  return { id, family: familyOf(id), name, status: 'pass', detail }
}

export function warn(id: string, name: string, detail: string, fix?: string): CheckRow {
  return { id, family: familyOf(id), name, status: 'warn', detail, ...(fix ? { fix } : {}) }
}

export function fail(id: string, name: string, detail: string, fix: string): CheckRow {
  return { id, family: familyOf(id), name, status: 'fail', detail, fix }
}

function familyOf(id: string): CheckRow['family'] {
  const head = id.split('.')[0]!
  return (['store', 'targets', 'keys', 'policy', 'notify'].includes(head) ? head : 'config') as CheckRow['family']
}
