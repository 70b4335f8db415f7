import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { notarySection } from '../../core/notary/open.js'
import { serveNotary } from '../../core/notary/serve.js'

export interface NotaryServeResult {
  url: string
  path: string
}

export default class NotaryServe extends BaseCommand<typeof NotaryServe> {
  static override summary = 'Serve the notary: the signed log agents and notarized services both write to (docs/notary.md).'
  static override description = `Runs until SIGTERM or SIGINT. Keeps, per effect, one hash-chained list of records signed by whoever wrote them: intend and abort by agents ([notary.agents]), claim, performed and failed by services ([notary.services]). A record whose writer is not trusted for its kind, whose signature does not verify, or that does not follow its effect's chain (a replay) is refused and not stored. claim and abort of one attempt exclude each other: the first written wins, the other is told the winner.

API: POST /v1/records (a signed record), GET /v1/effects/<id>, GET /v1/effects/<id>/attempts/<n>, GET /healthz, GET /metrics (Prometheus text).

Exit codes: 0 stopped by a signal; 3 no [notary] section or an invalid one; 4 the PostgreSQL log (url) is unreachable.`
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --port 7311']

  static override flags = {
    host: Flags.string({ description: 'Address to listen on. Default: the host of [notary] listen.' }),
    port: Flags.integer({ min: 0, max: 65_535, description: 'Port to listen on (0: any free port). Default: the port of [notary] listen.' }),
  }

  async run(): Promise<NotaryServeResult> {
    const notary = await serveNotary(notarySection(await this.interlockConfig()), { host: this.flags.host, port: this.flags.port })
    this.logToStderr(`notary listening on ${notary.url}, log ${notary.path}`)
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve)
      process.once('SIGINT', resolve)
    })
    await notary.close()
    return { url: notary.url, path: notary.path }
  }
}
