import { describe, expect, it } from 'vitest'
import { estimateTokens } from '../../../src/domain/tokens/estimate-tokens.ts'
import { Ledger, TEN, call, message, model, ordinalsOf, pack, prompt, reasoning, result } from './context-fixtures.ts'

const CALL = estimateTokens('f') + estimateTokens('{}') // a call to f with {}
const RESULT = estimateTokens('f') + 10 // f's result TEN

describe('PackingHistory unit boundaries (canStart)', () => {
  it('joins a call and its result', () => {
    const { history } = new Ledger().add(1, prompt('go'), { runId: 'r1' }).add(2, call('a', 'f', '{}'), { runId: 'r1' }).add(3, result('a', 'f', 'ok'), { runId: 'r2' })
    expect(history.canStart).toEqual([true, true, false])
  })

  it('joins a reasoning part (and the run\'s messages after it) with the call it led to', () => {
    const { history } = new Ledger()
      .add(1, reasoning('think'), { runId: 'r1' })
      .add(2, message('let me look'), { runId: 'r1' })
      .add(3, call('a', 'f', '{}'), { runId: 'r1' })
      .add(4, result('a', 'f', 'ok'), { runId: 'r2' })
    expect(history.canStart).toEqual([true, false, false, false])
  })

  it('does not join reasoning of another run', () => {
    const { history } = new Ledger().add(1, reasoning('think'), { runId: 'r1' }).add(2, call('a', 'f', '{}'), { runId: 'r2' }).add(3, result('a', 'f', 'ok'), { runId: 'r3' })
    expect(history.canStart).toEqual([true, true, false])
  })

  it('joins parallel calls and their results, in either order of answer', () => {
    for (const answers of [
      ['a', 'b'],
      ['b', 'a'],
    ]) {
      const ledger = new Ledger().add(1, reasoning('think'), { runId: 'r1' }).add(2, call('a', 'f', '{}'), { runId: 'r1' }).add(3, call('b', 'f', '{}'), { runId: 'r1' })
      answers.forEach((id, k) => ledger.add(4 + k, result(id, 'f', 'ok'), { runId: 'r2' }))
      expect(ledger.history.canStart).toEqual([true, false, false, false, false])
    }
  })

  it('keeps running sums of the whole estimates', () => {
    const { history } = new Ledger().add(1, prompt('a'), { tokens: 5 }).add(2, prompt('b'), { tokens: 7 }).add(3, prompt('c'), { tokens: 11 })
    expect(history.prefix).toEqual([0, 5, 12, 23])
  })
})

describe('a tool call and its result are packed together or not at all', () => {
  const ledger = () =>
    new Ledger()
      .add(1, prompt(TEN), { runId: 'r1' })
      .add(2, call('c1', 'f', '{}'), { runId: 'r1' })
      .add(3, result('c1', 'f', TEN), { runId: 'r2' })
      .add(4, message(TEN), { runId: 'r2' })

  it('drops the result with its call when the call does not fit', () => {
    // message 10 + result fits; + the call does not.
    const packed = pack({ history: ledger().history, model: model(10 + RESULT + CALL - 1) })
    expect(ordinalsOf(packed)).toEqual([4])
    expect(packed.context.dropped).toEqual({ dropped: 3, start_ordinal: 1, end_ordinal: 3 })
    expect(packed.context.tokens.history).toBe(10)
  })

  it('keeps both once the pair fits', () => {
    const packed = pack({ history: ledger().history, model: model(10 + RESULT + CALL) })
    expect(ordinalsOf(packed)).toEqual([2, 3, 4])
    expect(packed.context.dropped).toEqual({ dropped: 1, start_ordinal: 1, end_ordinal: 1 })
    expect(packed.context.tokens.history).toBe(10 + RESULT + CALL)
  })
})

describe('reasoning is packed with the call it led to', () => {
  const ledger = () =>
    new Ledger()
      .add(1, prompt(TEN), { runId: 'r1' })
      .add(2, reasoning(TEN), { runId: 'r1' })
      .add(3, call('c1', 'f', '{}'), { runId: 'r1' })
      .add(4, result('c1', 'f', TEN), { runId: 'r2' })
      .add(5, message(TEN), { runId: 'r2' })

  it('drops the call and its result when their reasoning does not fit', () => {
    const packed = pack({ history: ledger().history, model: model(10 + RESULT + CALL + 10 - 1) })
    expect(ordinalsOf(packed)).toEqual([5])
    expect(packed.context.dropped).toEqual({ dropped: 4, start_ordinal: 1, end_ordinal: 4 })
  })

  it('keeps reasoning, call and result together once they fit', () => {
    const packed = pack({ history: ledger().history, model: model(10 + RESULT + CALL + 10) })
    expect(ordinalsOf(packed)).toEqual([2, 3, 4, 5])
    expect(packed.context.dropped).toEqual({ dropped: 1, start_ordinal: 1, end_ordinal: 1 })
  })

  it('reasoning older than the reasoning threshold is omitted and costs nothing; its call is kept', () => {
    // reasoning 0: only reasoning with nothing newer would be replayed.
    const packed = pack({ history: ledger().history, model: model(10 + RESULT + CALL), rules: { version: 1, reasoning: 0 } })
    expect(ordinalsOf(packed)).toEqual([3, 4, 5])
    expect(packed.context.segments).toEqual([
      { first_ordinal: 1, last_ordinal: 1, parts: 1, treatment: 'dropped', tokens: 0 },
      { first_ordinal: 2, last_ordinal: 2, parts: 1, treatment: 'omitted', tokens: 0 },
      { first_ordinal: 3, last_ordinal: 5, parts: 3, treatment: 'verbatim', tokens: CALL + RESULT + 10 },
    ])
  })
})

describe('parallel calls', () => {
  const ledger = () =>
    new Ledger()
      .add(1, prompt(TEN), { runId: 'r1' })
      .add(2, reasoning(TEN), { runId: 'r1' })
      .add(3, call('a', 'f', '{}'), { runId: 'r1' })
      .add(4, call('b', 'f', '{}'), { runId: 'r1' })
      .add(5, result('b', 'f', TEN), { runId: 'r2' })
      .add(6, result('a', 'f', TEN), { runId: 'r2' })
      .add(7, message(TEN), { runId: 'r2' })
  const unit = 10 + 2 * CALL + 2 * RESULT

  it('are one unit with their reasoning and results: all kept, in ledger order', () => {
    const packed = pack({ history: ledger().history, model: model(unit + 10) })
    expect(packed.parts.map((p) => [p.ordinal, p.kind])).toEqual([
      [2, 'reasoning'],
      [3, 'tool_call'],
      [4, 'tool_call'],
      [5, 'tool_result'],
      [6, 'tool_result'],
      [7, 'message'],
    ])
    expect(packed.context.dropped).toEqual({ dropped: 1, start_ordinal: 1, end_ordinal: 1 })
  })

  it('or all dropped: a budget one token short of the unit keeps none of it', () => {
    const packed = pack({ history: ledger().history, model: model(unit + 10 - 1) })
    expect(ordinalsOf(packed)).toEqual([7])
    expect(packed.context.dropped).toEqual({ dropped: 6, start_ordinal: 1, end_ordinal: 6 })
  })
})
