/**
 * A scripted language model for the AI SDK (MockLanguageModelV4 from
 * `ai/test`, the v4 result shape: `finishReason` an object, token counts
 * objects, tool input a JSON string). The script decides each step from the
 * prompt alone, as a model with no memory; like a real model it mints a new
 * toolCallId for every call.
 */
import { randomUUID } from 'node:crypto'
import { MockLanguageModelV4 } from 'ai/test'

type LanguageModelV4Prompt = Parameters<MockLanguageModelV4['doGenerate']>[0]['prompt']
type LanguageModelV4Content = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>['content'][number]
export type Prompt = LanguageModelV4Prompt

export type Script = (prompt: LanguageModelV4Prompt) => LanguageModelV4Content[]

export const call = (toolName: string, input: Record<string, unknown>): LanguageModelV4Content => ({ type: 'tool-call', toolCallId: `call_${randomUUID().slice(0, 8)}`, toolName, input: JSON.stringify(input) })
export const say = (text: string): LanguageModelV4Content => ({ type: 'text', text })

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } }

export function scriptedModel(script: Script): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      const content = script(prompt)
      const calls = content.some((c) => c.type === 'tool-call')
      return { content, finishReason: { unified: calls ? 'tool-calls' : 'stop', raw: undefined }, usage, warnings: [] }
    },
  })
}

export interface SeenResult {
  toolCallId: string
  toolName: string
  /** 'text' for a result, 'error-text' for an error (toModelOutput), ... */
  type: string
  value: string
}

/** The tool results of the prompt's last message (none when it is the user's). */
export function lastResults(prompt: LanguageModelV4Prompt): SeenResult[] {
  const last = prompt.at(-1)
  if (last?.role !== 'tool') return []
  return last.content.flatMap((p) => (p.type === 'tool-result' ? [{ toolCallId: p.toolCallId, toolName: p.toolName, type: p.output.type, value: String((p.output as { value?: unknown }).value ?? '') }] : []))
}

/** Every tool result the prompt carries, in order. */
export function allResults(prompt: LanguageModelV4Prompt): SeenResult[] {
  return prompt.flatMap((m) => (m.role === 'tool' ? lastResults([m]) : []))
}

/** The user's text in the prompt's first user message. */
export function request(prompt: LanguageModelV4Prompt): string {
  const user = prompt.find((m) => m.role === 'user')
  return user ? user.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('') : ''
}
