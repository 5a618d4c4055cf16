import { describe, expect, it } from 'vitest'
import { CHAT_PAGE_DEFAULT, CHAT_PAGE_MAX, HISTORY_PAGE_MAX, HISTORY_PAGE_MAX_FULL, clampLimit } from '../../src/domain/paging.ts'

describe('clampLimit', () => {
  it('clamps below 1 up to 1', () => {
    expect(clampLimit(0, 100)).toBe(1)
    expect(clampLimit(-50, 100)).toBe(1)
  })

  it('clamps above the maximum down to it', () => {
    expect(clampLimit(1000, 100)).toBe(100)
    expect(clampLimit(21, 20)).toBe(20)
  })

  it('keeps values in range', () => {
    expect(clampLimit(1, 100)).toBe(1)
    expect(clampLimit(37, 100)).toBe(37)
    expect(clampLimit(100, 100)).toBe(100)
  })

  it('uses the fallback, or the maximum, when absent', () => {
    expect(clampLimit(undefined, 100, 20)).toBe(20)
    expect(clampLimit(undefined, 20)).toBe(20)
  })

  it('has the limits of spec §8', () => {
    expect(CHAT_PAGE_MAX).toBe(100)
    expect(HISTORY_PAGE_MAX).toBe(100)
    expect(HISTORY_PAGE_MAX_FULL).toBe(20)
    expect(CHAT_PAGE_DEFAULT).toBeGreaterThanOrEqual(1)
    expect(CHAT_PAGE_DEFAULT).toBeLessThanOrEqual(CHAT_PAGE_MAX)
  })
})
