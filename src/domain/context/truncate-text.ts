import { decode } from 'gpt-tokenizer'
import type { Truncation, TruncationShape } from '../config/config-types.ts'
import { encodeBounded, estimateTokens } from '../tokens/estimate-tokens.ts'

/** The visible marker a cut payload carries (decisions §5.2). */
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
  // The estimator's own tokens (linear even on unbroken text), so the cut and the count agree.
  const tokens = encodeBounded(text)
  const marker = mark ? truncationMarker(tokens.length - to) : ''
  switch (shape) {
    case 'head':
      return joinCut(decode(tokens.slice(0, to)), marker, '')
    case 'tail':
      return joinCut('', marker, decode(tokens.slice(tokens.length - to)))
    case 'head_and_tail': {
      const head = Math.ceil(to / 2)
      const tail = to - head
      return joinCut(decode(tokens.slice(0, head)), marker, tail === 0 ? '' : decode(tokens.slice(tokens.length - tail)))
    }
    default: {
      const unknown: never = shape
      throw new Error(`unknown shape ${String(unknown)}`)
    }
  }
}

const joinCut = (head: string, marker: string, tail: string) => [head, marker, tail].filter((s) => s !== '').join(marker === '' ? '' : ' ')
