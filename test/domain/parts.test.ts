import { describe, expect, it } from 'vitest'
import { PART_KINDS, roleOf } from '../../src/domain/parts.ts'

describe('roleOf', () => {
  it('derives user for prompts and tool results, assistant for the rest', () => {
    expect(Object.fromEntries(PART_KINDS.map((kind) => [kind, roleOf(kind)]))).toEqual({
      prompt: 'user',
      tool_result: 'user',
      message: 'assistant',
      reasoning: 'assistant',
      tool_call: 'assistant',
    })
  })

  it('throws on an unknown kind', () => {
    expect(() => roleOf('bogus' as never)).toThrow(/bogus/)
  })
})
