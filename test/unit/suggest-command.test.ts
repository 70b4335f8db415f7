/**
 * "Did you mean …?" for mistyped commands: which commands or topics come
 * closest, given oclif's ids (words joined by ':', arguments included).
 */
import { describe, expect, it } from 'vitest'
import { distance, suggestCommands, type CommandCandidate } from '../../src/cli/suggest-command.js'

const CANDIDATES: CommandCandidate[] = [
  { id: 'outbox', takesArgs: false },
  { id: 'relay', takesArgs: false },
  { id: 'operator', takesArgs: false },
  { id: 'config', takesArgs: false },
  { id: 'check', takesArgs: false },
  { id: 'demo', takesArgs: false },
  { id: 'init', takesArgs: false },
  { id: 'install', takesArgs: false },
  { id: 'config:show', takesArgs: false },
  { id: 'outbox:status', takesArgs: false },
  { id: 'outbox:list', takesArgs: false },
  { id: 'outbox:show', takesArgs: true },
  { id: 'outbox:release', takesArgs: true },
  { id: 'operator:keygen', takesArgs: false },
  { id: 'relay:keygen', takesArgs: false },
]

function suggest(typed: string): string[] {
  return suggestCommands(typed, CANDIDATES).map((s) => s.words.join(' '))
}

describe('suggestCommands', () => {
  it('a typo in a topic or a command word finds the command', () => {
    expect(suggest('outbx:status')).toEqual(['outbox status'])
    expect(suggest('outbox:stauts')).toEqual(['outbox status'])
    expect(suggest('relay:kegen')).toEqual(['relay keygen'])
    expect(suggest('instal')).toEqual(['install'])
  })

  it('a mistyped topic alone finds the topic', () => {
    expect(suggest('outbx')).toEqual(['outbox'])
  })

  it("keeps a command's arguments after its id, and only for a command that takes some", () => {
    expect(suggest('outbox:shw:3f9a')).toEqual(['outbox show 3f9a'])
    expect(suggest('outbx:release:3f9a')).toEqual(['outbox release 3f9a'])
  })

  it("a command's last word typed alone finds every command it ends", () => {
    expect(suggest('status')).toEqual(['outbox status'])
    expect(suggest('keygen')).toEqual(['operator keygen', 'relay keygen'])
    expect(suggest('show:3f9a')).toEqual(['outbox show 3f9a'])
  })

  it('suggests nothing for a word close to no command', () => {
    expect(suggest('frobnicate')).toEqual([])
    expect(suggest('foo')).toEqual([])
    expect(suggest('')).toEqual([])
  })

  it('distance counts insertions, deletions, substitutions and swaps of neighbours, one typo each', () => {
    expect(distance('outbx', 'outbox')).toBe(1)
    expect(distance('stauts', 'status')).toBe(1)
    expect(distance('wiat', 'wait')).toBe(1)
    expect(distance('ab', 'ba')).toBe(1)
    expect(distance('abc', 'ca')).toBe(3)
    expect(distance('kitten', 'sitting')).toBe(3)
    expect(distance('', 'abc')).toBe(3)
    expect(distance('same', 'same')).toBe(0)
  })
})
