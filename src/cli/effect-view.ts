/** How one effect is shown to a person: what it does, what it rests on, what holds it, who signed what. */
import type { EffectDetails } from '../core/outbox/show.js'

export function effectLines(d: EffectDetails): string[] {
  const lines = [
    `Effect   ${d.effect.id}`,
    `State    ${d.state}`,
    `Target   ${d.effect.target} (tier ${d.tier})`,
    `Action   ${d.effect.action}`,
    `Thread   ${d.effect.thread}`,
  ]
  if (d.effect.principal !== undefined) lines.push(`Principal ${d.effect.principal}`)
  lines.push(`Args     ${JSON.stringify(d.effect.args)}`, `Premises ${JSON.stringify(d.effect.premises)}`)
  if (d.effect.trace !== undefined) lines.push(`Trace    ${d.effect.trace.traceparent}${d.effect.trace.tracestate ? ` (tracestate ${d.effect.trace.tracestate})` : ''}`)
  if (d.amount !== undefined) lines.push(`Amount   ${d.amount}`)
  if (d.rule !== undefined) lines.push(`Held by  rule "${d.rule}"${d.ruleReason ? `: ${d.ruleReason}` : ''}`)
  if (d.compensates !== undefined) lines.push(`Compensates ${d.compensates}`)
  lines.push(`Digest   ${d.digest}`)
  if (d.rowDisagrees) lines.push(`WARNING  its effects row disagrees with its journal (${d.rowDisagrees.join(', ')}); shown as journaled; relays refuse to send it`)
  for (const { seq, statement: s } of d.statements) {
    const who = s.kind === 'receipt' ? `relay ${s.relay}` : `operator ${s.operator}`
    const extra = s.kind === 'release' ? `, valid until ${s.expiresAt}` : s.kind === 'resolution' ? (s.applied ? ': applied' : s.redispatch ? ': send again' : ': not applied') : s.kind === 'denial' ? `: ${s.reason}` : ''
    lines.push(`Signed   ${s.kind} by ${who} (record ${seq})${extra}`)
  }
  return lines
}
