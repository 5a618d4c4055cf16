import type { LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { describe, expect, it } from 'vitest'
import { readFinish } from '../../src/providers/read-finish.ts'

type FinishPart = Extract<LanguageModelV4StreamPart, { type: 'finish' }>
const finish = (unified: FinishPart['finishReason']['unified'], raw: string | undefined, input = 0): FinishPart => ({
  type: 'finish',
  finishReason: { unified, raw },
  usage: { inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 0, text: 0, reasoning: 0 } },
})

describe('readFinish: only a vendor that said how its answer ended finished it (issue 11)', () => {
  it('a stream the package calls interrupted (V4: ended without a completion signal) is not a finish', () => {
    expect(readFinish(finish('interrupted', undefined)).saysHowItEnded).toBe(false)
    expect(readFinish(finish('interrupted', 'message_stop_missing')).saysHowItEnded).toBe(false)
  })

  it('a closing finish with no vendor reason is not one either; a vendor reason is', () => {
    expect(readFinish(finish('other', undefined)).saysHowItEnded).toBe(false)
    expect(readFinish(finish('other', 'pause_turn')).saysHowItEnded).toBe(true)
    expect(readFinish(finish('stop', 'end_turn')).saysHowItEnded).toBe(true)
  })

  it('usage counts when the vendor reported some, finished or not', () => {
    expect(readFinish(finish('interrupted', undefined, 120)).usageReported).toBe(true)
    expect(readFinish(finish('interrupted', undefined, 0)).usageReported).toBe(false)
  })
})
