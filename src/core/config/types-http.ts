/**
 * An http target's request templates, as the engine sees them after
 * validation (schema-http.ts has the TOML keys and what each does). Every
 * key is optional at both levels: an action's own value wins over the
 * target's, which is the default for every action.
 */
import type { JsonObject, JsonValue } from '../canonical-json.js'
import type { Tier } from '../effect.js'

/** A status (201) or a class of them ("4xx"). */
export type StatusSpec = number | `${1 | 2 | 3 | 4 | 5}xx`

/** What the request's body is: JSON text or a TOML table with placeholders, form fields, or a GraphQL document and its variables. */
export type HttpBodyTemplate =
  | { kind: 'json'; template: JsonValue; /** As written, when it was JSON text (checked at load). */ text?: string }
  | { kind: 'form'; fields: Record<string, string | string[]> }
  | { kind: 'graphql'; query: string; variables: JsonObject; operationName?: string }

/** The parts of one request: where, how, and what it carries. */
export interface HttpRequestTemplate {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url?: string
  /** Query parameters appended to the URL, each value a template. */
  params?: Record<string, string>
  headers?: Record<string, string>
  body?: HttpBodyTemplate
}

/** How an answer is judged; unlisted statuses keep the built-in reading (docs/targets.md, "What the answer means"). */
export interface HttpAnswerRules {
  committed?: StatusSpec[]
  failed?: StatusSpec[]
  retryLater?: StatusSpec[]
  unknown?: StatusSpec[]
  /** JSON pointer to what the receipt keeps as `id` (the created object's id). */
  receipt?: string
  /** JSON pointer: a value there in an answer otherwise COMMITTED makes it FAILED, with that value as the reason. */
  error?: string
}

/** Tier 2: the request that asks whether an effect happened, and what "found" means. */
export interface HttpQueryTemplate extends HttpRequestTemplate {
  /** JSON pointer: the effect happened when the answer has a value there (equal to `foundEquals`, when given). */
  found?: string
  /** Template the value at `found` must equal (or, for a list, contain). */
  foundEquals?: string
  /** Statuses meaning "happened" when `found` is not given (default 2xx). */
  foundStatus?: StatusSpec[]
  /** Statuses meaning "did not happen" (default [404]). */
  notFoundStatus?: StatusSpec[]
  /** JSON pointer to the receipt's `id` in a found answer. */
  receipt?: string
  /** How long a write may take to show in the query's answers: a "not found" sooner than this after the send is not believed. */
  settleMs?: number
}

/** A premise: a GET read when the agent decides and again before dispatch. */
export interface HttpReadTemplate {
  url: string
  params?: Record<string, string>
  headers?: Record<string, string>
  /** JSON pointers of what matters; default: the whole body. */
  pointers?: string[]
}

/** Everything a [targets.<name>] table or one of its actions may declare about requests. */
export interface HttpTemplateKeys extends HttpRequestTemplate, HttpAnswerRules {
  /** Header the effect id is sent in (default "Idempotency-Key" at tier 1, none otherwise). */
  effectIdHeader?: string
  query?: HttpQueryTemplate
  restsOn?: HttpReadTemplate[]
}

/** [targets.<name>.actions.<action>]. */
export interface HttpActionConfig extends HttpTemplateKeys {
  /** The action's own tier; default the target's. */
  tier?: Tier
  /** The top-level arguments the action takes; when given, templates may name no other and a call may carry no other. */
  args?: string[]
}
