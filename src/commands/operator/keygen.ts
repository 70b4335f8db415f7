import { BaseCommand } from '../../cli/base-command.js'
import { keygen, keygenFlags, type KeygenResult } from '../../cli/keygen.js'

export default class OperatorKeygen extends BaseCommand<typeof OperatorKeygen> {
  static override summary = 'Make an ed25519 key pair for an operator.'
  static override description = `Writes the private key to a file only you can read (mode 0600; never overwritten without --force), optionally encrypted with a passphrase, and prints the [[operators]] table to paste into interlock.toml. Key files readable by group or others are refused whenever they are used.

Exit codes: 0 written; 2 bad flags or the passphrase variable is unset; 6 the key file exists.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --name alice',
    '<%= config.bin %> <%= command.id %> --name alice --out ~/.interlock/alice.key --passphrase-env ALICE_PASSPHRASE',
    '<%= config.bin %> <%= command.id %> --name alice --json',
  ]
  static override allowDefaultConfig = true
  static override flags = keygenFlags

  async run(): Promise<KeygenResult> {
    const result = keygen('operator', this.flags, process.env)
    this.log(`Wrote ${result.encrypted ? 'an encrypted' : 'a'} private key to ${result.path} (mode 0600). Keep it to yourself.`)
    this.log(`Public key: ${result.publicKey}`)
    this.log('\nAdd this to interlock.toml:\n')
    this.log(result.toml)
    return result
  }
}
