/**
 * The Node versions bin/run.js accepts are package.json's "engines", read at
 * start: these cases pin how a range reads and which versions it admits. The
 * built binary under a real unsupported Node: test/e2e/node-runtime.test.ts.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { describeLines, parseEngines, supportedLines, unsupportedNode } from '../../src/cli/node-runtime.js'
import { ExitCode } from '../../src/core/errors.js'

const engines = (JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { engines: { node: string } }).engines.node

describe('the supported Node versions', () => {
  it("are package.json's engines, Node 22 and 24", () => {
    expect(engines).toBe('^22.0.0 || ^24.0.0')
    expect(supportedLines()).toEqual(parseEngines(engines))
    expect(describeLines(supportedLines())).toBe('22 or 24')
  })

  it.each(['22.0.0', '22.23.5', '24.0.0', '24.22.3'])('admit %s', (version) => {
    expect(unsupportedNode(version, supportedLines())).toBeUndefined()
  })

  it.each(['20.20.2', '21.99.0', '23.11.1', '25.0.0', '26.1.0', '18.20.8'])('refuse %s: E_NODE_VERSION, exit 3, naming both', (version) => {
    const refusal = unsupportedNode(version, supportedLines())!
    expect(refusal.message).toBe(`Interlock needs Node.js 22 or 24; this is ${version}`)
    expect(refusal.code).toBe('E_NODE_VERSION')
    expect(refusal.exitCode).toBe(ExitCode.CONFIG)
    expect(refusal.hint).toBe('Run it with Node.js 22 or 24 (https://nodejs.org/en/download).')
  })

  it('a line that starts past x.0.0 admits from there on', () => {
    const lines = parseEngines('^22.12.0 || ^24.0.0')
    expect(describeLines(lines)).toBe('22.12.0 or later 22, or 24')
    expect(unsupportedNode('22.11.9', lines)?.message).toBe('Interlock needs Node.js 22.12.0 or later 22, or 24; this is 22.11.9')
    expect(unsupportedNode('22.12.0', lines)).toBeUndefined()
    expect(unsupportedNode('22.13.0', lines)).toBeUndefined()
  })

  it('a range form it cannot read throws, rather than admitting or refusing by guess', () => {
    expect(() => parseEngines('>=22')).toThrow(/caret ranges/)
    expect(() => parseEngines('^22 || ^24')).toThrow(/caret ranges/)
  })
})
