import { describe, expect, it } from 'vitest'
import { estimateToolTokens } from '../../../src/domain/tokens/estimate-tool-tokens.ts'
import { estimateTokens, saturatingAdd, TOKEN_ESTIMATE_MAX } from '../../../src/domain/tokens/estimate-tokens.ts'

describe('estimateTokens', () => {
  it('is 0 for the empty string', () => {
    expect(estimateTokens('')).toBe(0)
  })

  it('is a positive integer for text and grows with it', () => {
    const one = estimateTokens('The quick brown fox jumps over the lazy dog.')
    expect(Number.isInteger(one)).toBe(true)
    expect(one).toBeGreaterThan(0)
    expect(estimateTokens('The quick brown fox jumps over the lazy dog. '.repeat(50))).toBeGreaterThan(one * 10)
  })

  it.each(['<|endoftext|>', '<|im_start|>system<|im_end|>', 'a <|endofprompt|> b'])(
    'counts special-token text %j as plain text without throwing',
    (text) => {
      expect(() => estimateTokens(text)).not.toThrow()
      expect(estimateTokens(text)).toBeGreaterThan(0)
    },
  )

  it('int32 max is the ceiling', () => {
    expect(TOKEN_ESTIMATE_MAX).toBe(2 ** 31 - 1)
  })

  it('saturating addition stops at int32 max', () => {
    expect(saturatingAdd()).toBe(0)
    expect(saturatingAdd(1, 2, 3)).toBe(6)
    expect(saturatingAdd(TOKEN_ESTIMATE_MAX, 1)).toBe(TOKEN_ESTIMATE_MAX)
    expect(saturatingAdd(TOKEN_ESTIMATE_MAX - 1, TOKEN_ESTIMATE_MAX - 1, TOKEN_ESTIMATE_MAX)).toBe(TOKEN_ESTIMATE_MAX)
  })

  it('a tool costs its compact JSON definition in one canonical shape, however it was written', () => {
    const schema = { type: 'object', properties: { q: { type: 'string' } } }
    const canonical = { name: 'search', description: null, input_schema: schema, strict: null }
    expect(estimateToolTokens({ name: 'search', input_schema: schema })).toBe(estimateTokens(JSON.stringify(canonical)))
    // Key order and left-out optional fields do not change the count: configuration and the sandbox agree.
    expect(estimateToolTokens({ strict: null, input_schema: schema, name: 'search', description: null })).toBe(estimateToolTokens({ name: 'search', input_schema: schema }))
    expect(estimateToolTokens({ name: 'search', input_schema: schema, description: 'searches the whole index' })).toBeGreaterThan(estimateToolTokens({ name: 'search', input_schema: schema }))
  })
})
