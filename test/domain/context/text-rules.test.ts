import { describe, expect, it } from 'vitest'
import type { RetentionRules } from '../../../src/domain/config/config-types.ts'
import { payloadTruncation } from '../../../src/domain/context/retention-choices.ts'
import { Ledger, TEN, message, pack, partAt, prompt, reasoning, sentText } from './context-fixtures.ts'

/** Ordinals 1–4: prompt, message, reasoning, prompt; each 10 tokens (TEN). verbatim_within left out: all are older. */
function packText(rules: RetentionRules, refusal: string | null = null) {
  const history = new Ledger()
    .add(1, prompt(TEN))
    .add(2, message(refusal === null ? TEN : '', refusal))
    .add(3, reasoning(TEN))
    .add(4, prompt(TEN)).history
  return pack({ history, rules })
}

const always = (to: number) => ({ mode: 'always', to }) as const

describe('payloadTruncation for prose', () => {
  it('takes text.prompt for prompts, text.message for messages, nothing for reasoning', () => {
    const rules: RetentionRules = { version: 1, text: { prompt: always(1), message: always(2) } }
    expect(payloadTruncation(prompt(TEN), rules)).toEqual(always(1))
    expect(payloadTruncation(message(TEN), rules)).toEqual(always(2))
    expect(payloadTruncation(reasoning(TEN), rules)).toEqual({ mode: 'keep' })
    expect(payloadTruncation(prompt(TEN), { version: 1 })).toEqual({ mode: 'keep' })
  })
})

describe('text rules for older prompts and messages', () => {
  it('text.prompt cuts older prompts and leaves messages alone', () => {
    const packed = packText({ version: 1, text: { prompt: always(3) } })
    expect(partAt(packed, 1)).toMatchObject({ treatment: 'truncated', content: { type: 'prompt', text: ' one two three [… 7 tokens truncated …]' } })
    expect(partAt(packed, 4)).toMatchObject({ treatment: 'truncated', content: { text: ' one two three [… 7 tokens truncated …]' } })
    expect(partAt(packed, 2)).toMatchObject({ treatment: 'verbatim', content: { type: 'message', text: TEN } })
  })

  it('text.message cuts older messages and leaves prompts alone', () => {
    const packed = packText({ version: 1, text: { message: { mode: 'over', over: 5, to: 2, keep: 'tail' } } })
    expect(partAt(packed, 2)).toMatchObject({ treatment: 'truncated', content: { type: 'message', text: '[… 8 tokens truncated …]  nine ten' } })
    expect(partAt(packed, 1)).toMatchObject({ treatment: 'verbatim', content: { text: TEN } })
  })

  it('a refusal is the message text that is cut', () => {
    const packed = packText({ version: 1, text: { message: always(2) } }, TEN)
    expect(partAt(packed, 2)).toMatchObject({ treatment: 'truncated', content: { type: 'message', text: ' one two [… 8 tokens truncated …]' } })
  })

  it('reasoning is never cut by the text rules: it is replayed or omitted', () => {
    const packed = packText({ version: 1, text: { prompt: always(0), message: always(0) } })
    expect(partAt(packed, 3)).toMatchObject({ treatment: 'verbatim', content: { type: 'reasoning', text: TEN } })
  })

  it('text left out replays prose whole', () => {
    const packed = packText({ version: 1 })
    expect(packed.parts.map((p) => [p.treatment, sentText(p.content)])).toEqual([
      ['verbatim', TEN],
      ['verbatim', TEN],
      ['verbatim', TEN],
      ['verbatim', TEN],
    ])
  })

  it('a prose payload within the rule is not marked truncated', () => {
    const packed = packText({ version: 1, text: { prompt: always(10), message: { mode: 'over', over: 10, to: 1 } } })
    expect(packed.parts.map((p) => p.treatment)).toEqual(['verbatim', 'verbatim', 'verbatim', 'verbatim'])
  })

  it('mark_truncations false drops the marker from prose cuts too', () => {
    const packed = packText({ version: 1, text: { prompt: { mode: 'always', to: 4, keep: 'head_and_tail' } }, tools: { mark_truncations: false } })
    expect(partAt(packed, 1)).toMatchObject({ treatment: 'truncated', content: { text: ' one two nine ten' } })
  })

  it('always with to 0 leaves a prompt that is only the marker', () => {
    const packed = packText({ version: 1, text: { prompt: { mode: 'always', to: 0, keep: 'tail' } } })
    expect(sentText(partAt(packed, 1).content)).toBe('[… 10 tokens truncated …]')
  })

  it('verbatim_within protects the newest parts from the text rules', () => {
    // History budget 1000; verbatim_within 0.01 → 10 tokens: ordinal 4 (0 newer) and 3 (10 newer) are
    // within; ordinal 2 has 20 newer and is cut.
    const packed = packText({ version: 1, text: { prompt: always(1), message: always(1) }, verbatim_within: 0.01 })
    expect(packed.context.history_budget).toBe(1_000)
    expect(packed.parts.map((p) => p.treatment)).toEqual(['truncated', 'truncated', 'verbatim', 'verbatim'])
    expect(sentText(partAt(packed, 4).content)).toBe(TEN)
  })
})
