import { describe, expect, it } from 'vitest'
import type { RetentionRules } from '../../../src/domain/config/config-types.ts'
import { ContextTooLargeError } from '../../../src/domain/errors.ts'
import { estimateTokens } from '../../../src/domain/tokens/estimate-tokens.ts'
import { Ledger, TEN, call, media, message, model, ordinalsOf, pack, packRaw, partAt, prompt, reasoning, result, sentText, words } from './context-fixtures.ts'

const png = media('cat.png', 'image/png', 2_048)

/** Rules that would cut every payload and turn every attachment into a marker. */
const HARSH: RetentionRules = {
  version: 1,
  text: { prompt: { mode: 'always', to: 1 }, message: { mode: 'always', to: 1 } },
  tools: { default: { arguments: { mode: 'always', to: 1 }, result: { mode: 'always', to: 1 } } },
  media: { default: 0 },
  reasoning: 0,
}

describe('anchor parts', () => {
  it('are replayed verbatim however the rules would cut them', () => {
    const history = new Ledger()
      .add(1, prompt(TEN), { media: [png] })
      .add(2, message(TEN))
      .add(3, prompt(TEN), { media: [png] })
      .add(4, message(TEN)).history
    const packed = pack({ history, rules: { ...HARSH, anchor_parts: 2 } })
    expect(partAt(packed, 1)).toMatchObject({ treatment: 'verbatim', content: { text: TEN, attachments: [{ kind: 'file', media: png }] } })
    expect(partAt(packed, 2)).toMatchObject({ treatment: 'verbatim', content: { text: TEN } })
    // The same parts outside the anchors are cut.
    expect(partAt(packed, 3)).toMatchObject({ treatment: 'truncated', content: { text: ' one [… 9 tokens truncated …]', attachments: [{ kind: 'marker' }] } })
    expect(partAt(packed, 4)).toMatchObject({ treatment: 'truncated', content: { text: ' one [… 9 tokens truncated …]' } })
    // prompt 10 + 1 image token, message 10.
    expect(packed.context.tokens.anchors).toBe(21)
  })

  it('anchored reasoning is replayed even where the reasoning threshold would omit it', () => {
    const history = new Ledger().add(1, reasoning(TEN)).add(2, prompt('x')).add(3, reasoning(TEN)).add(4, prompt('y')).history
    const packed = pack({ history, rules: { ...HARSH, anchor_parts: 1 } })
    expect(partAt(packed, 1)).toMatchObject({ treatment: 'verbatim', content: { type: 'reasoning', text: TEN } })
    // The same reasoning in the history is older than the threshold (1 token newer > floor(1000 × 0) = 0): omitted.
    expect(ordinalsOf(packed)).toEqual([1, 2, 4])
    expect(packed.context.segments).toContainEqual({ first_ordinal: 3, last_ordinal: 3, parts: 1, treatment: 'omitted', tokens: 0 })
  })

  it('are extended to a whole call/result unit', () => {
    const history = new Ledger()
      .add(1, prompt('go'), { runId: 'r1' })
      .add(2, call('c1', 'search', '{"q":"x"}'), { runId: 'r1' })
      .add(3, result('c1', 'search', TEN), { runId: 'r2' })
      .add(4, message(TEN), { runId: 'r2' }).history
    // anchor_parts 2 ends inside the unit 2–3: the result joins the anchors, verbatim.
    const packed = pack({ history, rules: { ...HARSH, anchor_parts: 2 } })
    expect(partAt(packed, 3)).toMatchObject({ treatment: 'verbatim', content: { text: TEN } })
    expect(partAt(packed, 4).treatment).toBe('truncated')
    expect(packed.context.tokens.anchors).toBe(
      estimateTokens('go') + estimateTokens('search') + estimateTokens('{"q":"x"}') + estimateTokens('search') + 10,
    )
  })

  it('are extended over reasoning, parallel calls and their results', () => {
    const history = new Ledger()
      .add(1, reasoning('think'), { runId: 'r1' })
      .add(2, call('a', 'f', '{}'), { runId: 'r1' })
      .add(3, call('b', 'f', '{}'), { runId: 'r1' })
      .add(4, result('a', 'f', TEN), { runId: 'r2' })
      .add(5, result('b', 'f', TEN), { runId: 'r2' })
      .add(6, prompt(TEN), { runId: 'r2' }).history
    const packed = pack({ history, rules: { ...HARSH, anchor_parts: 1 } })
    expect(packed.parts.map((p) => [p.ordinal, p.treatment])).toEqual([
      [1, 'verbatim'],
      [2, 'verbatim'],
      [3, 'verbatim'],
      [4, 'verbatim'],
      [5, 'verbatim'],
      [6, 'truncated'],
    ])
  })

  it('anchor_parts larger than the history anchors all of it', () => {
    const history = new Ledger().add(1, prompt(TEN)).add(2, prompt(TEN)).history
    const packed = pack({ history, rules: { ...HARSH, anchor_parts: 10 } })
    expect(packed.parts.map((p) => p.treatment)).toEqual(['verbatim', 'verbatim'])
    expect(packed.context.tokens).toMatchObject({ anchors: 20, history: 0 })
  })
})

describe('the current exchange', () => {
  it('new parts are sent verbatim, attachments included, whatever the rules', () => {
    const history = new Ledger().add(1, prompt(TEN)).history
    const packed = pack({ history, rules: HARSH, newParts: [{ body: prompt(TEN), media: [png] }] })
    expect(packed.parts.at(-1)).toMatchObject({ ordinal: -1, treatment: 'verbatim', content: { text: TEN, attachments: [{ kind: 'file', media: png }] } })
    expect(packed.context.tokens.current).toBe(11)
    expect(packed.newPartsSent).toEqual([true])
  })

  it('the run whose calls the new results answer is current: verbatim, never dropped, extended to whole units', () => {
    const history = new Ledger()
      .add(1, prompt(words(50)), { runId: 'r1' })
      .add(2, call('c1', 'search', '{}'), { runId: 'r1' })
      .add(3, result('c1', 'search', TEN), { runId: 'r2' })
      .add(4, message(TEN), { runId: 'r2' })
      .add(5, call('c2', 'search', '{}'), { runId: 'r2' }).history
    const newParts = [{ body: result('c2', 'search', TEN), media: [] }]
    // r2 starts at ordinal 3, a result that cannot begin a range: the current exchange starts at its call, 2.
    const searchCall = estimateTokens('search') + estimateTokens('{}')
    const searchResult = estimateTokens('search') + 10
    const current = searchCall + searchResult + 10 + searchCall + searchResult // ordinals 2–5 and the new result
    // The window leaves exactly nothing for history.
    const packed = pack({ history, rules: HARSH, newParts, currentRuns: ['r2'], model: model(current) })
    expect(packed.context.tokens.current).toBe(current)
    expect(packed.context.history_budget).toBe(0)
    expect(packed.parts.map((p) => [p.ordinal, p.treatment])).toEqual([
      [2, 'verbatim'],
      [3, 'verbatim'],
      [4, 'verbatim'],
      [5, 'verbatim'],
      [-1, 'verbatim'],
    ])
    expect(sentText(partAt(packed, 4).content)).toBe(TEN)
    expect(packed.context.dropped).toEqual({ dropped: 1, start_ordinal: 1, end_ordinal: 1 })
  })

  it('a new result whose call is not in the history is not sent', () => {
    const history = new Ledger().add(1, call('c1', 'f', '{}'), { runId: 'r1' }).history
    const packed = pack({
      history,
      newParts: [
        { body: result('c1', 'f', 'ok'), media: [] },
        { body: result('ghost', 'f', 'ok'), media: [] },
      ],
      currentRuns: ['r1'],
    })
    expect(packed.newPartsSent).toEqual([true, false])
    expect(packed.parts.map((p) => [p.ordinal, p.kind])).toEqual([
      [1, 'tool_call'],
      [-1, 'tool_result'],
    ])
  })
})

describe('context_too_large', () => {
  const history = () => new Ledger().add(1, prompt(words(50))).add(2, prompt(TEN)).history
  const input = { instructionsTokens: 700, toolsTokens: 250, rules: { version: 1, anchor_parts: 1 }, newParts: [{ body: prompt(TEN), media: [] }] }

  it('is thrown when the fixed parts exceed the input budget, naming each one', () => {
    // 700 + 250 + 50 (anchor) + 10 (current) = 1010 > 1000.
    let thrown: unknown
    try {
      packRaw({ history: history(), ...input, model: model(1_000) })
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(ContextTooLargeError)
    const error = thrown as ContextTooLargeError
    expect(error.code).toBe('context_too_large')
    expect(error.message).toBe(
      "the fixed parts need 1010 tokens but the model's input budget is 1000: instructions 700, tools 250, anchor parts 50, the current exchange 10",
    )
    expect(error.details).toEqual({ input_budget: 1000, estimated_tokens: 1010, fixed_tokens: { instructions: 700, tools: 250, anchors: 50, current: 10 } })
  })

  it('counts headroom: the same parts fail in a window whose budget is below them', () => {
    // floor(1100 × 0.9) = 990 < 1010.
    expect(() => packRaw({ history: history(), ...input, model: model(1_100), budget: { version: 3, headroom: 0.1 } })).toThrow(
      "the fixed parts need 1010 tokens but the model's input budget is 990",
    )
  })

  it('is not thrown when the fixed parts fill the budget exactly: the history is dropped instead', () => {
    const packed = pack({ history: history(), ...input, model: model(1_010) })
    expect(packed.context.history_budget).toBe(0)
    expect(packed.context.tokens).toEqual({ instructions: 700, tools: 250, anchors: 50, history: 0, summaries: 0, current: 10, total: 1_010 })
    expect(packed.context.dropped).toEqual({ dropped: 1, start_ordinal: 2, end_ordinal: 2 })
    expect(ordinalsOf(packed)).toEqual([1, -1])
  })
})
