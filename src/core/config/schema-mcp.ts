/**
 * JSON Schema of the mcp target, part of schema.ts's target schema: one
 * upstream MCP server (a program spoken to over stdio, or a Streamable HTTP
 * URL) whose tools are effects, each at the tier declared under
 * [targets.<name>.tools.<tool>] or, undeclared, the one its MCP annotations
 * give (targets/mcp/tiers.ts).
 *
 * Templates (in `key_arg`'s neighbours `mark`, `query` and `rests_on`) name
 * what they take in braces: `{effect_id}`, or `{args.<path>}` for one of the
 * call's arguments (`{args.edits.0.newText}`); a string that is exactly one
 * placeholder takes the argument's value as it is (a list stays a list).
 */
import { NAME } from '../effect.js'
import { DURATION } from './schema-policy.js'
import { durationMs } from './schema-common.js'
import { mcpProxyHttp } from './schema-mcp-http.js'

/** MCP tool names: letters, digits, `_`, `-` and `.` (modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-names). */
export const TOOL_NAME = '^[A-Za-z0-9_.-]{1,128}$'

const toolName = (description: string) =>
  ({
    type: 'string',
    pattern: TOOL_NAME,
    patternErrorMessage: 'must be an MCP tool name: letters, digits, "_", "-" and "." (at most 128)',
    description,
  }) as const

const argsTemplate = (description: string) =>
  ({
    type: 'object',
    description,
    additionalProperties: { description: 'An argument of the read: a value, or a template such as "{args.path}".' },
  }) as const

const principals = (description: string) =>
  ({
    type: 'array',
    items: { type: 'string', minLength: 1, maxLength: 300, description: 'A principal, e.g. "token:ci-bot", or a prefix ending in *, e.g. "oauth:https://id.example.com#*".' },
    description,
  }) as const

const ALLOW =
  'Principals who may call {what} through `interlock mcp-proxy`: "user:<login>" (stdio: the OS user the proxy runs as), "token:<name>" (a static bearer token), "oauth:<issuer>#<subject>" (an OAuth access token); a trailing * matches every principal that starts with what precedes it ("token:*"). Anyone else\'s call is refused with a tool error naming the principal and this key, before anything is journaled or sent. Default: anyone.'
const DENY = 'Principals who may not call {what}, whatever `allow` says (same forms). Their calls are refused with a tool error naming the principal and this key, before anything is journaled or sent.'

const read = {
  type: 'object',
  additionalProperties: false,
  required: ['tool'],
  properties: {
    tool: toolName('The upstream tool read, e.g. "read_text_file". It must not change anything.'),
    args: argsTemplate('Its arguments, e.g. { path = "{args.path}" }: the call\'s own `path` argument.'),
  },
} as const

const query = {
  type: 'object',
  additionalProperties: false,
  required: ['tool', 'found'],
  description:
    'Tier 2: how to ask whether an effect already happened, after a crash or an unknown outcome. The read tool is called with `args`; when its result contains the text `found`, the effect happened (COMMITTED without calling again); when it does not, it did not (sent again).',
  properties: {
    tool: toolName('The upstream read tool asked, e.g. "search_nodes" or "read_text_file".'),
    args: argsTemplate('Its arguments, e.g. { query = "interlock-effect {effect_id}" }.'),
    found: {
      type: 'string',
      minLength: 1,
      description:
        'Text whose presence in the read\'s result means the effect happened, e.g. "interlock-effect {effect_id}" (a marker the write carried, see `mark`) or "{args.content}".',
    },
  },
} as const

const mark = {
  type: 'object',
  additionalProperties: false,
  required: ['path', 'value'],
  description:
    'Where the call carries its effect id to the server, so a query can find it later: the value is added at `path` of the arguments sent (appended when `path` names a list, set otherwise). The journal keeps the arguments as the agent gave them; the mark is added when the call is sent.',
  properties: {
    path: {
      type: 'string',
      pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$',
      patternErrorMessage: 'must be a dotted path into the arguments, e.g. "entities.0.observations"',
      description: 'Dotted path into the arguments, e.g. "entities.0.observations" (list indexes are numbers).',
    },
    value: { type: 'string', minLength: 1, description: 'What is added there; must contain {effect_id}, e.g. "interlock-effect {effect_id}".' },
  },
} as const

const tool = {
  type: 'object',
  additionalProperties: false,
  required: ['tier'],
  description: 'How one upstream tool goes through the gate.',
  properties: {
    tier: {
      enum: [1, 2, 3, 'read'],
      description:
        '"read": forwarded, not journaled (it changes nothing). 1: the tool may be sent again safely (it is idempotent, or deduplicates on `key_arg`). 2: whether it happened can be asked (needs `query`). 3: neither; a crash in flight becomes AMBIGUOUS. Undeclared tools take theirs from their MCP annotations: readOnlyHint → "read", idempotentHint → 1, otherwise 3.',
    },
    key_arg: {
      type: 'string',
      pattern: '^[A-Za-z0-9_-]+$',
      patternErrorMessage: 'must be an argument name',
      description: 'Tier 1: an argument of the tool that takes an idempotency key; the effect id is sent in it. Without it, sending again relies on the tool being idempotent.',
    },
    mark: mark,
    query: query,
    rests_on: {
      type: 'array',
      description:
        'Premises: the reads this tool\'s call rests on, e.g. [{ tool = "read_text_file", args = { path = "{args.path}" } }]. What the agent read through the proxy (or, if it did not, what the read answers when the call is made) is read again right before the call is sent; if the answer changed, the call is REJECTED and nothing is sent.',
      items: read,
    },
    dedupe: {
      enum: ['window', 'always', 'marked'],
      description:
        'When the same call (same thread, tool and arguments) comes again after the first has COMMITTED: "window" (default): within `dedupe_window` it is a retry and gets the first\'s result, after it a new call; "always": always a retry; "marked": a new call unless the client marks it a retry (_meta "interlock/retry"). A call whose first is still in flight, held or ambiguous always joins it; one after a REJECTED or FAILED first is a new call (nothing was done) unless marked a retry, which gets the first\'s answer again.',
    },
    dedupe_window: {
      type: 'string',
      pattern: DURATION,
      patternErrorMessage: 'must be a whole number followed by ms, s, m, h or d, e.g. "10m"',
      description: 'With dedupe = "window": how long after the first committed an identical call is a retry. Default "10m".',
    },
    allow: principals(ALLOW.replace('{what}', 'this tool (reads too); the target\'s own `allow` and `deny` apply as well')),
    deny: principals(DENY.replace('{what}', 'this tool')),
  },
  allOf: [
    // Tier 2 is defined by its query; elsewhere a query would be silently unused.
    { if: { properties: { tier: { const: 2 } }, required: ['tier'] }, then: { required: ['query'] }, else: { properties: { query: false } } },
    { if: { properties: { tier: { const: 1 } }, required: ['tier'] }, else: { properties: { key_arg: false } } },
    { if: { properties: { tier: { const: 'read' } }, required: ['tier'] }, then: { properties: { mark: false, rests_on: false, dedupe: false, dedupe_window: false } } },
    { if: { properties: { dedupe: { enum: ['always', 'marked'] } }, required: ['dedupe'] }, then: { properties: { dedupe_window: false } } },
  ],
} as const

export const mcpTarget = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: {
      const: 'mcp',
      description:
        'An MCP server (`interlock mcp-proxy` stands in front of it): each tool call that changes something is an effect, at the tier declared under [targets.<name>.tools.<tool>] or given by the tool\'s annotations.',
    },
    command: {
      type: 'string',
      minLength: 1,
      description: 'The program that runs the MCP server over stdio, e.g. "npx". Give this or `url`.',
    },
    args: { type: 'array', items: { type: 'string', description: 'One argument.' }, description: 'Its arguments, e.g. ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"].' },
    env: {
      type: 'object',
      description:
        'Environment of the server, on top of HOME, LOGNAME, PATH, SHELL, TERM and USER (nothing else of Interlock\'s environment is passed on but what `env_pass` names), e.g. { API_TOKEN = "${API_TOKEN}", NODE_EXTRA_CA_CERTS = "${NODE_EXTRA_CA_CERTS}" }.',
      additionalProperties: { type: 'string', description: 'Variable value.' },
    },
    env_pass: {
      type: 'array',
      uniqueItems: true,
      items: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', patternErrorMessage: 'must be an environment variable name', description: 'A variable name.' },
      description:
        'Variables of Interlock\'s own environment passed on to the server as they are, when set (an unset one is left out), e.g. ["HTTPS_PROXY", "NO_PROXY", "NODE_EXTRA_CA_CERTS"]. Their values are not treated as secrets: pass a credential with env = { TOKEN = "${TOKEN}" }, which also refuses to start without it.',
    },
    cwd: { type: 'string', minLength: 1, description: 'Working folder of the server; relative to the folder of this config file. Default: that folder.' },
    url: {
      type: 'string',
      pattern: '^(https?://|\\$\\{)',
      patternErrorMessage: 'must be an http:// or https:// URL, or start with a ${VAR} reference',
      description: 'The server\'s Streamable HTTP endpoint, e.g. "https://mcp.example.com/mcp". Give this or `command`.',
    },
    headers: {
      type: 'object',
      description: 'Request headers for `url`, e.g. Authorization = "Bearer ${MCP_TOKEN}".',
      additionalProperties: { type: 'string', description: 'Header value.' },
    },
    thread: {
      type: 'string',
      pattern: NAME.source,
      patternErrorMessage: 'must be "per-session", "per-client", or a thread name of 1-200 letters, digits or ._:@/-',
      description:
        'The thread (journal) of `interlock mcp-proxy`\'s calls that name none in _meta: "per-session" (default): each MCP session its own, so a host that restarts and repeats a call applies it again; "per-client": one per caller and client name (clientInfo.name), so a repeated call after a restart is answered from the journal, and so is a deliberate repeat in another conversation, by the tool\'s `dedupe`; any other name: that one thread for every session. --thread overrides it.',
    },
    timeout_ms: durationMs('Longest wait for one answer of the server (a tool call, a read, a query), in milliseconds; past it the call\'s outcome is unknown and its tier decides. Default 60000.'),
    connect_timeout_ms: durationMs('Longest wait to start or reach the server and initialize the session, in milliseconds. Default 10000.'),
    max_result_bytes: {
      type: 'integer',
      minimum: 0,
      maximum: 16_777_216,
      description:
        'Largest tool result (as JSON) journaled with COMMITTED, in bytes, so a retried call gets it back without calling the server again. A larger one is journaled as its size and digest, and a retry is told so. Default 65536.',
    },
    allow: principals(ALLOW.replace('{what}', 'any tool of this server (reads too); a tool\'s own `allow` and `deny` apply as well')),
    deny: principals(DENY.replace('{what}', 'any tool of this server')),
    tools: {
      type: 'object',
      description: 'Tools declared by name, as [targets.<name>.tools.<tool>] tables; every other tool takes its tier from its annotations.',
      propertyNames: { pattern: TOOL_NAME, patternErrorMessage: 'tool names use letters, digits, "_", "-" and "." (at most 128)' },
      additionalProperties: tool,
    },
    proxy_http: mcpProxyHttp,
  },
  // A stdio server or an HTTP one: the other's keys would be silently unused.
  if: { required: ['url'] },
  then: { properties: { command: false, args: false, env: false, env_pass: false, cwd: false } },
  else: { required: ['command'], properties: { headers: false } },
} as const
