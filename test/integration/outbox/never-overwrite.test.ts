/** `outbox export` and `outbox anchor` keep evidence: neither writes over a file that is already there. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { InterlockError } from '../../../src/core/errors.js'
import { signAnchor, writeAnchor } from '../../../src/core/outbox/anchor-file.js'
import { exportJournal } from '../../../src/core/outbox/export-file.js'
import { sqliteOutbox, type OutboxHarness } from '../../helpers/outbox-stores.js'

const harnesses: OutboxHarness[] = []
afterAll(async () => {
  for (const h of harnesses) await h.dispose()
})

function existingFile(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'interlock-keep-')), 'kept')
  writeFileSync(path, 'earlier evidence\n')
  return path
}

async function refusal(write: () => unknown): Promise<InterlockError> {
  try {
    await write()
  } catch (e) {
    if (e instanceof InterlockError) return e
    throw e
  }
  throw new Error('the write was not refused')
}

describe('files kept as evidence', () => {
  it('an export refuses an existing --out (E_EXPORT_FILE, exit 1) and leaves it as it was', async () => {
    const h = await sqliteOutbox()
    harnesses.push(h)
    const store = await h.open()
    const path = existingFile()
    const e = await refusal(() => exportJournal(store, path, new Date()))
    await store.close()
    expect(e.code).toBe('E_EXPORT_FILE')
    expect(e.exitCode).toBe(1)
    expect(e.message).toContain(`cannot write export file ${path}`)
    expect(e.hint).toBe('Choose a new --out: an export never overwrites a file.')
    expect(readFileSync(path, 'utf8')).toBe('earlier evidence\n')
  })

  it('an anchor refuses an existing --out (E_ANCHOR_FILE, exit 1) and leaves it as it was', async () => {
    const path = existingFile()
    const file = signAnchor([{ journal: 'j', seq: 1, hash: 'a'.repeat(64) }], 'sqlite', generateKeyPair('operator', 'alice'), new Date())
    const e = await refusal(() => writeAnchor(path, file))
    expect(e.code).toBe('E_ANCHOR_FILE')
    expect(e.exitCode).toBe(1)
    expect(e.message).toContain(`cannot write anchor file ${path}`)
    expect(e.hint).toBe('Choose a new --out: an anchor never overwrites a file.')
    expect(readFileSync(path, 'utf8')).toBe('earlier evidence\n')
  })
})
