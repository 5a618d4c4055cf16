import { describe, expect, it } from 'vitest'
import { isMoneyString, moneyToUnits, MONEY_SCALE, unitsToMoney } from '../../src/domain/money.ts'

describe('money', () => {
  it('has ten fractional digits', () => {
    expect(MONEY_SCALE).toBe(10)
  })

  it('recognises signed decimals with at most ten fractional digits', () => {
    for (const ok of ['0', '12.50', '-3.1', '+7', '0.0000000001', '123456789.1234567890']) expect(isMoneyString(ok), ok).toBe(true)
    for (const bad of ['', '.5', '1.', '1e3', 'NaN', '1,5', '0.00000000001', ' 1', '--1', '0x10']) expect(isMoneyString(bad), bad).toBe(false)
  })

  it('converts to integer units of 10^-10 exactly', () => {
    expect(moneyToUnits('1')).toBe(10_000_000_000n)
    expect(moneyToUnits('0.1')).toBe(1_000_000_000n)
    expect(moneyToUnits('0.0000000001')).toBe(1n)
    expect(moneyToUnits('-12.5')).toBe(-125_000_000_000n)
    expect(moneyToUnits('0.1') + moneyToUnits('0.2')).toBe(moneyToUnits('0.3'))
    expect(moneyToUnits('922337203.6854775807')).toBe(9_223_372_036_854_775_807n)
  })

  it('refuses what is not a money string', () => {
    expect(() => moneyToUnits('1e3')).toThrow(RangeError)
    expect(() => moneyToUnits('0.00000000001')).toThrow(RangeError)
  })

  it('formats units with at least two fractional digits and no trailing zeros beyond', () => {
    expect(unitsToMoney(0n)).toBe('0.00')
    expect(unitsToMoney(1n)).toBe('0.0000000001')
    expect(unitsToMoney(3_000_000_000n)).toBe('0.30')
    expect(unitsToMoney(100_000_000_000n)).toBe('10.00')
    expect(unitsToMoney(-5_000_000_000n)).toBe('-0.50')
    expect(unitsToMoney(12_345_678_901n)).toBe('1.2345678901')
    expect(unitsToMoney(18_000_000_000_000_001n)).toBe('1800000.0000000001')
  })

  it('round-trips', () => {
    for (const amount of ['0.30', '10.00', '-0.50', '1.2345678901', '1800000.0000000001']) {
      expect(unitsToMoney(moneyToUnits(amount))).toBe(amount)
    }
  })
})
