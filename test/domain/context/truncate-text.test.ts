import { describe, expect, it } from 'vitest'
import { truncateText, truncationCuts, truncationMarker } from '../../../src/domain/context/truncate-text.ts'
import { estimateTokens } from '../../../src/domain/tokens/estimate-tokens.ts'
import { TEN, words } from './context-fixtures.ts'

describe('the texts these tests cut', () => {
  it('are one token a word', () => {
    expect(estimateTokens(TEN)).toBe(10)
    expect(estimateTokens(' one two three')).toBe(3)
    expect(estimateTokens(words(100))).toBe(100)
  })
})

describe('truncationMarker', () => {
  it('names the number of tokens cut', () => {
    expect(truncationMarker(1234)).toBe('[… 1234 tokens truncated …]')
  })
})

describe('Truncation mode keep', () => {
  it('replays the payload whole however long', () => {
    expect(truncateText(words(5_000), { mode: 'keep' }, true)).toEqual({ text: words(5_000), cut: false })
    expect(truncationCuts({ mode: 'keep' }, 5_000)).toBe(false)
  })
})

describe('Truncation mode always', () => {
  it('keeps the head by default, with a marker counting the 7 tokens cut', () => {
    expect(truncateText(TEN, { mode: 'always', to: 3 }, true)).toEqual({ text: ' one two three [… 7 tokens truncated …]', cut: true })
  })

  it('keeps the head when asked to', () => {
    expect(truncateText(TEN, { mode: 'always', to: 3, keep: 'head' }, true).text).toBe(' one two three [… 7 tokens truncated …]')
  })

  it('keeps the tail, the marker first', () => {
    // The kept tail starts with its own space (' eight'): marker, separator, tail.
    expect(truncateText(TEN, { mode: 'always', to: 3, keep: 'tail' }, true)).toEqual({ text: '[… 7 tokens truncated …]  eight nine ten', cut: true })
  })

  it('keeps half each for head_and_tail, the odd token going to the head', () => {
    expect(truncateText(TEN, { mode: 'always', to: 4, keep: 'head_and_tail' }, true).text).toBe(' one two [… 6 tokens truncated …]  nine ten')
    expect(truncateText(TEN, { mode: 'always', to: 3, keep: 'head_and_tail' }, true).text).toBe(' one two [… 7 tokens truncated …]  ten')
    expect(truncateText(TEN, { mode: 'always', to: 1, keep: 'head_and_tail' }, true).text).toBe(' one [… 9 tokens truncated …]')
  })

  it('sends only what survives when marks are off', () => {
    expect(truncateText(TEN, { mode: 'always', to: 3 }, false)).toEqual({ text: ' one two three', cut: true })
    expect(truncateText(TEN, { mode: 'always', to: 3, keep: 'tail' }, false)).toEqual({ text: ' eight nine ten', cut: true })
    expect(truncateText(TEN, { mode: 'always', to: 4, keep: 'head_and_tail' }, false)).toEqual({ text: ' one two nine ten', cut: true })
  })

  it('with to 0 and a keep shape, leaves only the marker, or nothing unmarked', () => {
    for (const keep of ['head', 'tail', 'head_and_tail'] as const) {
      expect(truncateText(TEN, { mode: 'always', to: 0, keep }, true)).toEqual({ text: '[… 10 tokens truncated …]', cut: true })
      expect(truncateText(TEN, { mode: 'always', to: 0, keep }, false)).toEqual({ text: '', cut: true })
    }
  })

  it('does not cut a payload already within to', () => {
    expect(truncateText(TEN, { mode: 'always', to: 10 }, true)).toEqual({ text: TEN, cut: false })
    expect(truncateText(TEN, { mode: 'always', to: 11 }, true)).toEqual({ text: TEN, cut: false })
    expect(truncationCuts({ mode: 'always', to: 10 }, 10)).toBe(false)
    expect(truncationCuts({ mode: 'always', to: 10 }, 11)).toBe(true)
  })

  it('counts the cut tokens in the marker for long payloads', () => {
    expect(truncateText(words(100), { mode: 'always', to: 40 }, true).text).toBe(`${words(40)} [… 60 tokens truncated …]`)
    expect(truncateText(words(100), { mode: 'always', to: 40, keep: 'tail' }, true).text).toBe(`[… 60 tokens truncated …] ${words(40)}`)
  })

  it('leaves an empty payload alone', () => {
    expect(truncateText('', { mode: 'always', to: 0 }, true)).toEqual({ text: '', cut: false })
  })
})

describe('Truncation mode over', () => {
  const over = { mode: 'over', over: 10, to: 3 } as const

  it('does not cut a payload at over', () => {
    expect(truncateText(TEN, over, true)).toEqual({ text: TEN, cut: false })
    expect(truncationCuts(over, 10)).toBe(false)
  })

  it('does not cut a payload below over, even when it is longer than to', () => {
    expect(truncateText(' one two three four five', over, true)).toEqual({ text: ' one two three four five', cut: false })
  })

  it('cuts to `to` once the payload exceeds over', () => {
    expect(truncationCuts(over, 11)).toBe(true)
    expect(truncateText(TEN, { mode: 'over', over: 9, to: 3 }, true)).toEqual({ text: ' one two three [… 7 tokens truncated …]', cut: true })
  })

  it('honours each shape and the marker switch', () => {
    const o = { mode: 'over', over: 9, to: 4 } as const
    expect(truncateText(TEN, { ...o, keep: 'tail' }, true).text).toBe('[… 6 tokens truncated …]  seven eight nine ten')
    expect(truncateText(TEN, { ...o, keep: 'head_and_tail' }, true).text).toBe(' one two [… 6 tokens truncated …]  nine ten')
    expect(truncateText(TEN, { ...o, keep: 'tail' }, false).text).toBe(' seven eight nine ten')
    expect(truncateText(TEN, { ...o, keep: 'head_and_tail' }, false).text).toBe(' one two nine ten')
    expect(truncateText(TEN, { ...o, keep: 'head' }, false).text).toBe(' one two three four')
  })
})
