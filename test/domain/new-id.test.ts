import { afterEach, describe, expect, it, vi } from 'vitest'
import { newId } from '../../src/domain/new-id.ts'

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
/** The leading 48 bits: milliseconds since the epoch. */
const msOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16)

afterEach(() => {
  vi.useRealTimers()
})

describe('newId', () => {
  it('makes distinct UUIDv7s across many refills of the random pool', () => {
    const ids = Array.from({ length: 10_000 }, newId)
    for (const id of ids) expect(id).toMatch(UUID_V7)
    expect(new Set(ids).size).toBe(ids.length)
    // The random part differs too, not just the time: no two ids share their last 12 hex digits.
    expect(new Set(ids.map((id) => id.slice(-12))).size).toBe(ids.length)
  })

  it('puts the current time in milliseconds in the leading 48 bits', () => {
    const before = Date.now()
    const id = newId()
    const after = Date.now()
    expect(msOf(id)).toBeGreaterThanOrEqual(before)
    expect(msOf(id)).toBeLessThanOrEqual(after)

    vi.useFakeTimers({ now: new Date('2031-05-06T07:08:09.123Z') })
    expect(msOf(newId())).toBe(Date.parse('2031-05-06T07:08:09.123Z'))
  })

  it('sorts ids made in a later millisecond after earlier ones', () => {
    vi.useFakeTimers({ now: 1_700_000_000_000 })
    const ids: string[] = []
    for (let i = 0; i < 300; i++) {
      ids.push(newId())
      vi.advanceTimersByTime(1)
    }
    expect(ids.map(msOf)).toEqual(ids.map((_, i) => 1_700_000_000_000 + i))
    expect([...ids].sort()).toEqual(ids)
  })
})
