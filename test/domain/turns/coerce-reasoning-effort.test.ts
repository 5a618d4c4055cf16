import { describe, expect, test } from 'vitest'
import { coerceReasoningEffort } from '../../../src/domain/turns/coerce-reasoning-effort.ts'

/**
 * docs/guide/turn-stream.md translation warnings: the rule behind test/actors/admission.test.ts
 * "reasoning_effort" (sandbox/plain does not reason; sandbox/low reasons up to low; sandbox/echo up to max).
 */
const PLAIN = { supports_reasoning: false, max_reasoning_effort: null }
const LOW = { supports_reasoning: true, max_reasoning_effort: 'low' }
const ECHO = { supports_reasoning: true, max_reasoning_effort: 'max' }

describe('coerceReasoningEffort', () => {
  test('is coerced to off with a warning on a model that does not reason', () => {
    expect(coerceReasoningEffort('high', PLAIN)).toEqual({
      value: 'off',
      warnings: [{ code: 'reasoning_effort_coerced', message: expect.any(String), details: { requested: 'high', applied: 'off' } }],
    })
  })

  test('is coerced down to the model’s maximum with a warning', () => {
    expect(coerceReasoningEffort('max', LOW)).toEqual({
      value: 'low',
      warnings: [{ code: 'reasoning_effort_coerced', message: expect.any(String), details: { requested: 'max', applied: 'low' } }],
    })
  })

  test('is kept, without a warning, when the model can honour it', () => {
    expect(coerceReasoningEffort('low', LOW)).toEqual({ value: 'low', warnings: [] })
    expect(coerceReasoningEffort('off', PLAIN)).toEqual({ value: 'off', warnings: [] })
    expect(coerceReasoningEffort('max', ECHO)).toEqual({ value: 'max', warnings: [] })
    expect(coerceReasoningEffort(null, PLAIN)).toEqual({ value: null, warnings: [] })
  })
})
