import { estimateTokens } from '../../src/domain/tokens/estimate-tokens.ts'

// Words of several tokens each. The sandbox counts each word delta of its echo ('word ', trailing
// space included) on its own against max_tokens, which counts one-token words twice: an echo of
// ~1,000 tokens of short words would stop at max_tokens (2,048 on echo-8k) with ~950 tokens out.
const WORDS =
  'riverbanks cobblestones nightingales overhanging willowherb fishermen lanterns mooring estuary sandbanks marshlands kingfishers driftwood harbourmaster seaweed lighthouses'.split(
    ' ',
  )

/** About `tokens` tokens of plain prose, different for every `seed`, never starting a line with `/`. */
export function prose(seed: number, tokens: number): string {
  const words: string[] = [`Turn ${seed}:`]
  let count = estimateTokens(words[0]!)
  let i = seed
  while (count < tokens) {
    const word = WORDS[i % WORDS.length]!
    words.push(word)
    count += estimateTokens(` ${word}`)
    i = (i * 7 + 3) % 9973
  }
  return words.join(' ')
}
