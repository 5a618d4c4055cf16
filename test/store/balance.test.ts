import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openTempStore } from '../helpers/temp-store.ts'

let t: ReturnType<typeof openTempStore>
let orgId: string

beforeEach(() => {
  t = openTempStore()
  orgId = t.store.organisations.create('Acme', 'acme').id
})
afterEach(() => {
  t.close()
})

describe('balance store', () => {
  it('starts at 0.00', () => {
    expect(t.store.balance.balanceOf(orgId)).toBe('0.00')
  })

  it('adds exactly: 0.1 + 0.2 is 0.30', () => {
    t.store.balance.add(orgId, 'topup', '0.1')
    const { balance } = t.store.balance.add(orgId, 'topup', '0.2')
    expect(balance).toBe('0.30')
    expect(t.store.balance.balanceOf(orgId)).toBe('0.30')
  })

  it('keeps ten fractional digits exactly', () => {
    t.store.balance.add(orgId, 'promotional_credit', '0.0000000001')
    t.store.balance.add(orgId, 'topup', '1.2345678901')
    expect(t.store.balance.balanceOf(orgId)).toBe('1.2345678902')
    t.store.balance.add(orgId, 'adjustment', '-1.2345678902')
    expect(t.store.balance.balanceOf(orgId)).toBe('0.00')
  })

  it('stays exact past 2^53 units (large sums are not floats)', () => {
    t.store.balance.add(orgId, 'topup', '900000')
    t.store.balance.add(orgId, 'topup', '900000')
    const { balance } = t.store.balance.add(orgId, 'topup', '0.0000000001')
    expect(balance).toBe('1800000.0000000001')
  })

  it('returns the entry with its amount formatted and the new balance', () => {
    t.store.balance.add(orgId, 'topup', '10')
    const { entry, balance } = t.store.balance.add(orgId, 'refund', '2.5')
    expect(entry).toMatchObject({ org_id: orgId, entry_type: 'refund', amount: '2.50', currency: 'USD' })
    expect(typeof entry.id).toBe('string')
    expect(new Date(entry.occurred_at).toISOString()).toBe(entry.occurred_at)
    expect(balance).toBe('12.50')
  })

  it('goes negative for debits and keeps organisations apart', () => {
    const other = t.store.organisations.create('Other', 'other').id
    t.store.balance.add(orgId, 'adjustment', '-0.75')
    t.store.balance.add(other, 'topup', '5')
    expect(t.store.balance.balanceOf(orgId)).toBe('-0.75')
    expect(t.store.balance.balanceOf(other)).toBe('5.00')
  })

  it('refuses amounts with more than ten fractional digits and writes nothing', () => {
    expect(() => t.store.balance.add(orgId, 'topup', '0.00000000001')).toThrow()
    expect(() => t.store.balance.add(orgId, 'topup', '1e3')).toThrow()
    expect(t.store.balance.balanceOf(orgId)).toBe('0.00')
    expect((t.db.prepare('SELECT count(*) AS n FROM balance_entries').get() as { n: number }).n).toBe(0)
  })
})
