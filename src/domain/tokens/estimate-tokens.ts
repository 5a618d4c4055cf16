import { countTokens } from 'gpt-tokenizer'

/** TokenEstimate is a saturating int32 (spec §2.1). */
export const TOKEN_ESTIMATE_MAX = 2_147_483_647

const NO_SPECIAL_TOKENS = { disallowedSpecial: new Set<string>() }

/**
 * The project's one token estimator (decisions §5): o200k_base BPE counts, used alike for
 * budgets, `estimated_tokens` and the sandbox's usage. Special-token text counts as plain text.
 */
export function estimateTokens(text: string): number {
  if (text.length === 0) return 0
  if (text.length < MEMO_MIN_LENGTH) {
    // Short texts are mostly words and deltas, which repeat: a plain bounded map, emptied when full.
    let known = shortMemo.get(text)
    if (known === undefined) {
      if (shortMemo.size >= SHORT_MEMO_MAX_ENTRIES) shortMemo.clear()
      known = count(text)
      shortMemo.set(text, known)
    }
    return known
  }
  // Every turn re-estimates the same history: remember long texts (bounded, least recently used out).
  const known = memo.get(text)
  if (known !== undefined) {
    memo.delete(text)
    memo.set(text, known)
    return known
  }
  const counted = count(text)
  if (text.length > MEMO_MAX_CHARS / 8) return counted
  memo.set(text, counted)
  memoChars += text.length
  while (memo.size > MEMO_MAX_ENTRIES || memoChars > MEMO_MAX_CHARS) {
    const oldest = memo.keys().next().value!
    memo.delete(oldest)
    memoChars -= oldest.length
  }
  return counted
}

// Shorter texts (single words, deltas) go to the plain short memo; from this length on, every history
// part (a reply of a few words included) goes to the least-recently-used one. Its entry bound must hold
// the parts of the chats in use, or a least-recently-used memo read in the same order never hits.
const MEMO_MIN_LENGTH = 32
const MEMO_MAX_ENTRIES = 65_536
const MEMO_MAX_CHARS = 16 * 1024 * 1024
const memo = new Map<string, number>()
const SHORT_MEMO_MAX_ENTRIES = 65_536
const shortMemo = new Map<string, number>()
let memoChars = 0
const count = (text: string) => Math.min(TOKEN_ESTIMATE_MAX, countTokens(text, NO_SPECIAL_TOKENS))

export function saturatingAdd(...estimates: number[]): number {
  return Math.min(TOKEN_ESTIMATE_MAX, estimates.reduce((sum, n) => sum + n, 0))
}
