import { describe, expect, it, vi } from 'vitest'

// No real string holds 2^31 tokens (V8 caps string length far below), so the tokenizer's count is
// replaced by one past int32 to prove the estimator saturates instead of overflowing.
vi.mock('gpt-tokenizer', () => ({ countTokens: () => 2 ** 31 + 5 }))

const { estimateTokens, TOKEN_ESTIMATE_MAX } = await import('../../../src/domain/tokens/estimate-tokens.ts')

describe('estimateTokens saturation', () => {
  it('never exceeds int32 max', () => {
    expect(estimateTokens('anything')).toBe(TOKEN_ESTIMATE_MAX)
  })
  it('still answers 0 for the empty string', () => {
    expect(estimateTokens('')).toBe(0)
  })
})
