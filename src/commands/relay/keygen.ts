import { BaseCommand } from '../../cli/base-command.js'
import { keygen, keygenFlags, type KeygenResult } from '../../cli/keygen.js'

export default class RelayKeygen extends BaseCommand<typeof RelayKeygen> {
  static override summary = 'Make an ed25519 key pair for a relay to sign receipts with.'
  static override description = `Writes the private key to a file only its owner can read (mode 0600; never overwritten without --force), optionally encrypted with a passphrase, and prints the public key that verifiers need (\`interlock outbox verify --relay-key <name>=<public key>\`).

Exit codes: 0 written; 2 bad flags or the passphrase variable is unset; 6 the key file exists.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --name relay-1 --out /etc/interlock/relay-1.key',
    '<%= config.bin %> <%= command.id %> --name relay-1 --json',
  ]
  static override allowDefaultConfig = true
  static override flags = keygenFlags

  async run(): Promise<KeygenResult> {
    const result = keygen('relay', this.flags, process.env)
    this.log(`Wrote ${result.encrypted ? 'an encrypted' : 'a'} private key to ${result.path} (mode 0600).`)
    this.log(`Public key: ${result.publicKey}`)
    this.log(`\nVerify its receipts with: interlock outbox verify --relay-key ${result.name}=${result.publicKey}`)
    return result
  }
}
