import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { wideFlag } from '../../cli/wide-flag.js'
import { AUTH_CHOICES, listOpenApiOperations, targetFromOpenApi, type AuthChoice, type GeneratedTarget, type OperationList } from '../../core/targets/http/openapi/from-openapi.js'

export default class TargetsFromOpenapi extends BaseCommand<typeof TargetsFromOpenapi> {
  static override allowDefaultConfig = true
  static override summary = 'Print the [targets.<name>] section of an http target for operations of an OpenAPI 3 document.'
  static override description = `Reads an OpenAPI 3.0 or 3.1 document (a JSON or YAML file; nothing is fetched) and prints, for each --operation (an operationId, or "METHOD /path"), an action of an http target in the service's own request shape: method; URL from the server and the path, path parameters as {args.NAME}; query parameters as params; the JSON body with one placeholder per top-level property ($ref and allOf resolved), or form fields; the documented 2xx statuses as committed, and a receipt pointer to the created object's id when the answer's schema requires one; credentials from the security scheme as a header read from an environment variable (\${GITHUB_TOKEN}), never a literal.

The tier: 1 when the document declares an idempotency header on the operation (Idempotency-Key, I-Twilio-Idempotency-Token, X-Idempotency-Key...; the effect id is sent in it), else 3, with a comment on what to check by hand to make it tier 2 (a read that finds what the call made, and how to declare it). Only required parameters and properties are sent: a template's argument must be passed on every call, so optional ones are listed in a comment and sent only with --include. Anything left out (a oneOf body, a cookie parameter, an API key in the query, another media type) is said in a comment and under "notes" in --json. Reads (GET, HEAD, OPTIONS) are refused: they are no effect.

Without --operation (or with --list), lists the operations that change something: operationId, method, path, summary.

Paste the output into interlock.toml, export the variables it names, and run \`interlock check\`.

Exit codes: 0 printed; 2 bad usage, a document that cannot be parsed or is not OpenAPI 3, an operation that is a read or has a body an http target cannot send (multipart, octet-stream); 7 no such file, or no such operation (with the nearest names).`
  static override examples = [
    '<%= config.bin %> <%= command.id %> api.github.com.json --list',
    '<%= config.bin %> <%= command.id %> api.github.com.json --operation issues/create --auth bearer >> interlock.toml',
    '<%= config.bin %> <%= command.id %> api.github.com.json --operation pulls/merge --operation issues/create-comment --name github --include merge_method',
    '<%= config.bin %> <%= command.id %> twilio_api_v2010.yaml --operation CreateMessage --server \'${TWILIO_URL}\' --json',
  ]
  static override args = {
    spec: Args.string({ required: true, description: 'The OpenAPI 3 document: a JSON or YAML file (not a URL).' }),
  }
  static override flags = {
    operation: Flags.string({
      char: 'o',
      multiple: true,
      helpValue: '<operationId>',
      description: 'An operation to declare as an action: its operationId, or "METHOD /path" (repeatable: one target, one action each).',
      exclusive: ['list'],
    }),
    list: Flags.boolean({ description: 'List the operations that change something (the default without --operation).' }),
    name: Flags.string({ helpValue: '<target>', description: 'The target\'s name. Default: from the document\'s server host (api.github.com → github).' }),
    server: Flags.string({ helpValue: '<url>', description: 'The service\'s base URL instead of the document\'s first server, e.g. a staging host or a ${VAR} reference.' }),
    auth: Flags.string({
      options: [...AUTH_CHOICES],
      default: 'document',
      description: 'Credentials: the document\'s security scheme, or a bearer token, basic auth, or none, e.g. for a document that declares none (GitHub\'s). Read from <NAME>_TOKEN or <NAME>_BASIC_AUTH.',
    }),
    include: Flags.string({
      multiple: true,
      helpValue: '<name>',
      description: 'An optional parameter or body property to send too (repeatable, or comma-separated; "all" for every one). Each becomes an argument every call must pass.',
    }),
    ...wideFlag,
  }

  async run(): Promise<GeneratedTarget | OperationList> {
    const f = this.flags
    if (!f.operation || f.operation.length === 0) return this.list()
    const target = targetFromOpenApi(this.args.spec, {
      operations: f.operation,
      name: f.name,
      server: f.server,
      auth: f.auth as AuthChoice,
      include: f.include,
    })
    this.log(target.toml.trimEnd())
    if (!this.jsonEnabled()) {
      const actions = target.actions.map((a) => `${a.action} (tier ${a.tier})`).join(', ')
      const vars = target.variables.length > 0 ? `; export ${target.variables.join(', ')}` : ''
      this.logToStderr(`[targets.${target.name}]: ${actions}${vars}. Read its comments (${target.notes.length} note${target.notes.length === 1 ? '' : 's'}) before use, then run \`interlock check\`.`)
    }
    return target
  }

  private list(): OperationList {
    const list = listOpenApiOperations(this.args.spec)
    if (list.operations.length === 0) {
      this.log(`${list.file} has no operation that changes something (POST, PUT, PATCH or DELETE).`)
      return list
    }
    this.table(
      ['operation', 'method', 'path', 'summary'],
      list.operations.map((o) => [o.operationId ?? `${o.method} ${o.path}`, o.method, o.path, o.summary]),
    )
    this.log(`${list.operations.length} operations that change something in ${list.title || list.file}. Declare one with --operation <operation>.`)
    return list
  }
}
