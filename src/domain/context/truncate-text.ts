import { decode } from 'gpt-tokenizer'
import type { Truncation, TruncationShape } from '../config/config-types.ts'
import { encodeBounded, estimateTokens, EXACT_MAX_CHARS } from '../tokens/estimate-tokens.ts'
import { isHighSurrogate, isLowSurrogate } from '../utf16.ts'

/** The visible marker a cut payload carries (docs/guide/context.md). */
export const truncationMarker = (cutTokens: number) => `[… ${cutTokens} tokens truncated …]`

export type CutText = { text: string; cut: boolean }

/** Whether `truncation` cuts a payload of `tokens` estimated tokens. */
export function truncationCuts(truncation: Truncation, tokens: number): boolean {
  switch (truncation.mode) {
    case 'keep':
      return false
    case 'always':
      return tokens > truncation.to
    case 'over':
      return tokens > truncation.over && tokens > truncation.to
    default: {
      const unknown: never = truncation
      throw new Error(`unknown truncation ${JSON.stringify(unknown)}`)
    }
  }
}

/**
 * `text` under `truncation`: whole, or cut to `to` tokens of the estimator, keeping the head, the
 * tail, or half of each, with a marker saying how many tokens were cut unless `mark` is false.
 */
export function truncateText(text: string, truncation: Truncation, mark: boolean): CutText {
  if (truncation.mode === 'keep') return { text, cut: false }
  if (!truncationCuts(truncation, estimateTokens(text))) return { text, cut: false }
  return { text: cutTo(text, truncation.to, truncation.keep ?? 'head', mark), cut: true }
}

function cutTo(text: string, to: number, shape: TruncationShape, mark: boolean): string {
  const head = shape === 'head' ? to : shape === 'tail' ? 0 : Math.ceil(to / 2)
  const tail = to - head
  if (text.length > EXACT_MAX_CHARS) return cutLong(text, head, tail, mark)
  // The estimator's own tokens (linear even on unbroken text), so the cut and the count agree.
  const tokens = encodeBounded(text)
  const marker = mark ? truncationMarker(tokens.length - to) : ''
  return joinCut(head === 0 ? '' : decode(tokens.slice(0, head)), marker, tail === 0 ? '' : decode(tokens.slice(tokens.length - tail)))
}

/**
 * A text too long to count exactly (its estimate is sampled, src/domain/tokens/estimate-tokens.ts) is
 * cut in bounded work too: the head is the first `head` tokens of a prefix of at most EXACT_MAX_CHARS
 * characters, the tail the last `tail` tokens of a suffix as long; a head or tail longer than that
 * window holds is cut by length instead, at the share of the text's characters its tokens are of the
 * estimate. The marker counts the estimate less what is kept, as for shorter texts.
 */
function cutLong(text: string, head: number, tail: number, mark: boolean): string {
  const total = estimateTokens(text)
  const marker = mark ? truncationMarker(Math.max(0, total - head - tail)) : ''
  return joinCut(head === 0 ? '' : headOf(text, head, total), marker, tail === 0 ? '' : tailOf(text, tail, total))
}

// Enough characters for `tokens` tokens of nearly any text (o200k_base averages about 4 a token on prose).
const windowFor = (tokens: number) => Math.min(EXACT_MAX_CHARS, 8 * tokens + 256)

function headOf(text: string, tokens: number, total: number): string {
  let end = windowFor(tokens)
  if (isHighSurrogate(text.charCodeAt(end - 1))) end--
  const window = encodeBounded(text.slice(0, end))
  // The window's last piece may be cut through, so its tokens must lie past those kept.
  if (window.length > tokens + 1) return decode(window.slice(0, tokens))
  let chars = Math.min(text.length, Math.round((text.length * tokens) / total))
  if (chars < text.length && isHighSurrogate(text.charCodeAt(chars - 1))) chars--
  return text.slice(0, chars)
}

function tailOf(text: string, tokens: number, total: number): string {
  let start = text.length - windowFor(tokens)
  if (isLowSurrogate(text.charCodeAt(start))) start++
  const window = encodeBounded(text.slice(start))
  if (window.length > tokens + 1) return decode(window.slice(window.length - tokens))
  let from = Math.max(0, text.length - Math.round((text.length * tokens) / total))
  if (from > 0 && isLowSurrogate(text.charCodeAt(from))) from++
  return text.slice(from)
}

const joinCut = (head: string, marker: string, tail: string) => [head, marker, tail].filter((s) => s !== '').join(marker === '' ? '' : ' ')
