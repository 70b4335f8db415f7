/** An effect's journal, oldest first: each record's state, time, signers, and whether its signature and chain link verify. */
import type { JsonObject } from '../../core/canonical-json.js'
import type { SignatureVerdict, TimelineEntry } from '../../core/outbox/timeline.js'
import { stateBadge } from './format.js'
import { html, type Html } from './html.js'

const VERDICT: Record<SignatureVerdict, string> = {
  valid: 'verifies',
  invalid: 'does not verify',
  unchecked: 'not checked: no relay key known',
  decision: 'the policy\'s decision, judged again by the policy in force',
  proposal: 'a proposal: its effect id is the hash of what it proposes',
  unsigned: 'unsigned',
}

/** Signatures and long values are shown elsewhere or not at all: the data column stays readable. */
const HIDDEN = new Set(['effect', 'release', 'releases', 'denial', 'resolution', 'recordSignature'])

export function timelineTable(entries: readonly TimelineEntry[]): Html {
  return html`<ol class="timeline">
${entries.map((t) => html`<li class="record${t.problems.length > 0 ? ' bad' : ''}">
<p class="head"><span class="seq">Record ${t.seq}</span> ${stateBadge(t.state)} <time datetime="${t.at}">${t.at}</time></p>
<dl>
<dt>Signed by</dt><dd>${t.signers.length > 0 ? t.signers.join('; ') : 'nobody'}</dd>
<dt>Signature</dt><dd class="verdict verdict-${t.signature}">${VERDICT[t.signature]}</dd>
<dt>Chain link</dt><dd>${t.seq === 1 ? `verifies (its hash; the first record of journal ${t.journal})` : `verifies (its hash, and its link to record ${t.seq - 1} of journal ${t.journal})`}</dd>
${summary(t.data) ? html`<dt>Data</dt><dd><code>${summary(t.data)}</code></dd>` : ''}
</dl>
${t.problems.length > 0 ? html`<ul class="problems">${t.problems.map((p) => html`<li role="alert">${p}</li>`)}</ul>` : ''}
</li>`)}
</ol>`
}

function summary(data: JsonObject): string {
  const shown = Object.fromEntries(Object.entries(data).filter(([k]) => !HIDDEN.has(k)))
  if (Object.keys(shown).length === 0) return ''
  const text = JSON.stringify(shown)
  return text.length > 240 ? `${text.slice(0, 237)}...` : text
}
