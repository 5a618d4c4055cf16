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
  if (text.length < MEMO_MIN_LENGTH) return count(text)
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

// Short enough that single words and deltas are counted directly; long enough that every history part
// (a reply of a few words included) is remembered. The entry bound must hold the parts of the chats in
// use, or a least-recently-used memo read in the same order every turn never hits.
const MEMO_MIN_LENGTH = 32
const MEMO_MAX_ENTRIES = 65_536
const MEMO_MAX_CHARS = 16 * 1024 * 1024
const memo = new Map<string, number>()
let memoChars = 0
const count = (text: string) => Math.min(TOKEN_ESTIMATE_MAX, countTokens(text, NO_SPECIAL_TOKENS))

export function saturatingAdd(...estimates: number[]): number {
  return Math.min(TOKEN_ESTIMATE_MAX, estimates.reduce((sum, n) => sum + n, 0))
}
