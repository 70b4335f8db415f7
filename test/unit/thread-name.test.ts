import { describe, expect, it } from 'vitest'
import { threadName as frameworkThread } from '../../src/integrations/agent/index.js'
import { threadName } from '../../src/integrations/thread-name.js'

// Journals already written are named by these strings: a changed name would orphan them.
describe('thread names as journals already name them', () => {
  it('agent frameworks: `/`, ids of up to 160 characters as given, others and lookalikes of a hash hashed', () => {
    expect(frameworkThread('langgraph', 'thread-42')).toBe('langgraph/thread-42')
    expect(frameworkThread('openai-agents', 'conv:7@a/b')).toBe('openai-agents/conv:7@a/b')
    expect(frameworkThread('langgraph', 'user #7 — chat')).toBe('langgraph/sha256-9bd96d1f68fcf699db8d8c5b08fd277f83fed964')
    expect(frameworkThread('anthropic', 'sha256-abc')).toBe('anthropic/sha256-ebf5465ab0550f30961c3acd5eaa22cb0bad604a')
    expect(frameworkThread('ai-sdk', 'x'.repeat(160))).toBe(`ai-sdk/${'x'.repeat(160)}`)
    expect(frameworkThread('ai-sdk', 'x'.repeat(170))).toBe('ai-sdk/sha256-b150200a3a04666089b4d412ce2e65df0c1570ce')
    expect(() => frameworkThread('langgraph', '')).toThrow(/non-empty/)
  })

  it('durable engines: `:`, ids as given while the whole name fits 200 characters, others hashed', () => {
    expect(threadName('restate', ':', 'inv_1abcDEF')).toBe('restate:inv_1abcDEF')
    expect(threadName('temporal', ':', 'order-42')).toBe('temporal:order-42')
    expect(threadName('temporal', ':', 'wf 1/ü')).toBe('temporal:sha256-47520ed02e9e723e3e97fc84926690de283ea963')
    expect(threadName('temporal', ':', 'sha256-abc')).toBe('temporal:sha256-abc')
    expect(threadName('restate', ':', 'y'.repeat(192))).toBe(`restate:${'y'.repeat(192)}`)
    expect(threadName('restate', ':', 'y'.repeat(193))).toBe('restate:sha256-69aebdc8b5667bced3086a30441dd6120c5a31f0')
  })

  it('the one function with `/` names a framework thread as the agent export does', () => {
    for (const id of ['thread-42', 'user #7 — chat', 'sha256-abc', 'x'.repeat(170)]) expect(threadName('langgraph', '/', id)).toBe(frameworkThread('langgraph', id))
  })
})
