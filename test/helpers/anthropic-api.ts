/**
 * The Anthropic Messages API as the SDK reaches it through `baseURL`
 * (`POST /v1/messages`, non-streaming), answered by a script that decides
 * from the last message of each request, as a model with no memory of its
 * own: a resumed process meets the same model. The tool runner threads the
 * conversation on the server by default (the first request creates a
 * thread, later ones send only the new messages with
 * `thread: { type: "continue" }`); the last message is in every request, so
 * the script needs nothing else. Like a real model, it mints a new tool_use
 * id for every call.
 *
 * Response shape: https://docs.anthropic.com/en/api/messages (Message object).
 */
import { randomUUID } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Block {
  type: string
  [k: string]: unknown
}

export interface Message {
  role: 'user' | 'assistant'
  content: string | Block[]
}

export interface ApiRequest {
  messages: Message[]
  last: Message
  tools: { name: string }[]
  thread?: unknown
}

export interface Reply {
  content: Block[]
}

export type Script = (request: ApiRequest) => Reply

export interface MessagesApi {
  url: string
  /** Every request, in order. */
  requests: ApiRequest[]
  close(): Promise<void>
}

export const toolUse = (name: string, input: Record<string, unknown>): Block => ({ type: 'tool_use', id: `toolu_${randomUUID().replace(/-/g, '')}`, name, input })
export const text = (t: string): Block => ({ type: 'text', text: t })

/** The tool_result blocks of a message (none when it is the user's text). */
export function toolResults(m: Message): { tool_use_id: string; content: unknown; is_error?: boolean }[] {
  return typeof m.content === 'string' ? [] : (m.content.filter((b) => b.type === 'tool_result') as never)
}

/** A tool_result's text, whether sent as a string or as text blocks. */
export function resultText(r: { content: unknown }): string {
  return typeof r.content === 'string' ? r.content : (r.content as { text?: string }[]).map((b) => b.text ?? '').join('')
}

/** The user's words in a message: its string, or its text blocks. */
export function userText(m: Message): string {
  return typeof m.content === 'string' ? m.content : m.content.filter((b) => b.type === 'text').map((b) => String(b.text)).join('')
}

export async function startMessagesApi(script: Script): Promise<MessagesApi> {
  const requests: ApiRequest[] = []
  let n = 0
  const server = http.createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (d: string) => (body += d))
    req.on('end', () => {
      const answer = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${++n}` })
        res.end(JSON.stringify(json))
      }
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) return answer(404, { type: 'error', error: { type: 'not_found_error', message: `${req.method} ${req.url}` } })
      try {
        const params = JSON.parse(body) as { messages: Message[]; tools?: { name: string }[]; thread?: unknown; model: string }
        const request: ApiRequest = { messages: params.messages, last: params.messages.at(-1)!, tools: params.tools ?? [], thread: params.thread }
        requests.push(request)
        const reply = script(request)
        const calls = reply.content.some((b) => b.type === 'tool_use')
        answer(200, {
          id: `msg_${randomUUID().replace(/-/g, '')}`,
          type: 'message',
          role: 'assistant',
          model: params.model,
          content: reply.content,
          stop_reason: calls ? 'tool_use' : 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 1, output_tokens: 1 },
        })
      } catch (e) {
        answer(500, { type: 'error', error: { type: 'api_error', message: `the scripted model failed: ${(e as Error).message}` } })
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
