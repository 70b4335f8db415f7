import { BaseCommand } from '../../cli/base-command.js'
import { keygen, keygenFlags, type KeygenResult } from '../../cli/keygen.js'

export default class NotaryKeygen extends BaseCommand<typeof NotaryKeygen> {
  static override summary = 'Make an ed25519 key pair for a notarized service to sign its claim, performed and failed records with.'
  static override description = `Writes the private key to a file only its owner can read (mode 0600; never overwritten without --force), optionally encrypted with a passphrase, and prints the line that trusts it in the notary's interlock.toml ([notary.services]). Agents sign their intend and abort records with their relay key (\`interlock relay keygen\`), trusted under [notary.agents].

Exit codes: 0 written; 2 bad flags or the passphrase variable is unset; 6 the key file exists.`
  static override examples = ['<%= config.bin %> <%= command.id %> --name payments --out /etc/payments/notary.key']
  static override allowDefaultConfig = true
  static override flags = keygenFlags

  async run(): Promise<KeygenResult> {
    const result = keygen('service', this.flags, process.env)
    this.log(`Wrote ${result.encrypted ? 'an encrypted' : 'a'} private key to ${result.path} (mode 0600).`)
    this.log(`Public key: ${result.publicKey}`)
    this.log(`\nTrust it in the notary's interlock.toml:\n${result.toml}`)
    return result
  }
}
