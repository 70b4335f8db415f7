/**
 * Targets that put text on the wire as UTF-8 bytes (an S3 body, a file or
 * commit message in a repository, a PostgreSQL text parameter) refuse, at
 * submit, a string without UTF-8 bytes (a lone surrogate) instead of sending
 * U+FFFD in its place; the same text is accepted as base64 where there is an
 * encoding, and well-formed text (astral characters included) as it is.
 */
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { InputError } from '../../src/core/errors.js'
import { createTarget } from '../../src/core/targets/registry.js'
import { parseRepoAction } from '../../src/core/targets/repo/actions.js'
import { parseS3Action } from '../../src/core/targets/s3/actions.js'
import { assertUtf8Text } from '../../src/core/targets/utf8-text.js'

const LONE = ['a\ud800', '\udc00b', 'x\ud83d y', 'end\udfff']
const WELL_FORMED = ['', 'Cafe\u0301', '\u{1f600}', '\u0000\u2028\ufeff', '\ud83d\ude00']

describe('text as UTF-8 bytes', () => {
  it('assertUtf8Text refuses each lone surrogate, naming the argument and the index, and passes well-formed text', () => {
    for (const s of WELL_FORMED) expect(() => assertUtf8Text(s, 'x')).not.toThrow()
    expect(() => assertUtf8Text('x\ud83d y', 'put: body')).toThrow(/^put: body is not well-formed Unicode: a lone surrogate \(\\uD83D\) at index 1 has no UTF-8 bytes/)
    for (const s of LONE) expect(() => assertUtf8Text(s, 'x'), JSON.stringify(s)).toThrow(InputError)
  })

  it('S3: a utf8 body with a lone surrogate is refused; its bytes in base64 are not', () => {
    for (const body of LONE) expect(() => parseS3Action('put', { key: 'k', body })).toThrow(/put: body is not well-formed Unicode/)
    const bytes = Buffer.from([0x61, 0xed, 0xa0, 0x80])
    const a = parseS3Action('put', { key: 'k', body: bytes.toString('base64'), encoding: 'base64' })
    expect(a.action === 'put' && a.body.equals(bytes)).toBe(true)
    const text = parseS3Action('put', { key: 'k', body: 'Cafe\u0301 \u{1f600}' })
    expect(text.action === 'put' && text.body.equals(Buffer.from('Cafe\u0301 \u{1f600}', 'utf8'))).toBe(true)
  })

  it('repo: file content, patch and commit message', () => {
    expect(() => parseRepoAction('write_file', { path: 'a.txt', content: 'a\ud800' })).toThrow(/write_file: content is not well-formed Unicode/)
    expect(() => parseRepoAction('write_file', { path: 'a.txt', content: 'ok', message: 'fix \udc00' })).toThrow(/write_file: message is not well-formed Unicode/)
    expect(() => parseRepoAction('apply_patch', { patch: '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+\ud800\n' })).toThrow(/apply_patch: patch is not well-formed Unicode/)
    const ok = parseRepoAction('write_file', { path: 'a.txt', content: 'Cafe\u0301' })
    expect(ok.action === 'write_file' && ok.content.equals(Buffer.from('Cafe\u0301', 'utf8'))).toBe(true)
  })

  it('postgres_row: a text argument', () => {
    const config = parseConfig(
      `[targets.orders]
type = "postgres_row"
url = "postgres://shop@db.example/shop"
table = "orders"
[targets.orders.columns]
note = "note"
`,
      { file: '/tmp/interlock.toml', env: {} },
    )
    const t = createTarget('orders', config.targets.orders!)
    expect(() => t.validateArgs!('insert', { note: 'x\ud800' })).toThrow(/args\.note \(target orders\) is not well-formed Unicode/)
    expect(() => t.validateArgs!('insert', { note: 'Cafe\u0301' })).not.toThrow()
  })
})

describe('an http target whose URL names an argument', () => {
  it('refuses that argument without UTF-8 bytes at submit; the JSON body carries any string', async () => {
    const { HttpTarget } = await import('../../src/core/targets/http/http-target.js')
    const t = new HttpTarget('hook', { tier: 3, url: 'http://127.0.0.1:9/docs/{args.doc}' })
    try {
      expect(() => t.validateArgs('put', { doc: 'a\ud800' })).toThrow(/args\.doc \(in target hook's URL\) is not well-formed Unicode/)
      expect(() => t.validateArgs('put', { doc: 'Cafe\u0301', note: 'b\ud800' })).not.toThrow()
    } finally {
      await t.close()
    }
  })
})
