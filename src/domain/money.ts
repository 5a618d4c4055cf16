import { Decimal } from 'decimal.js'

/**
 * Money is exact (docs/guide/billing-and-usage.md): decimal strings with up to 10 fractional digits.
 * Stored amounts are integers of 10^-10 currency units so SQLite sums them exactly.
 */
export const MONEY_SCALE = 10
const UNIT = new Decimal(10).pow(MONEY_SCALE)
const MONEY_PATTERN = /^[+-]?\d+(\.\d{1,10})?$/

export const Money = Decimal.clone({ precision: 60, rounding: Decimal.ROUND_HALF_EVEN })

export function isMoneyString(value: string): boolean {
  return MONEY_PATTERN.test(value)
}

export function moneyToUnits(amount: string): bigint {
  if (!isMoneyString(amount)) throw new RangeError(`not a money amount: ${amount}`)
  return BigInt(new Money(amount).mul(UNIT).toFixed(0))
}

/** Formats units as a plain decimal string with at least two fractional digits ("10.00", "0.0000001"). */
export function unitsToMoney(units: bigint): string {
  const value = new Money(units.toString()).div(UNIT)
  const fixed = value.toFixed(MONEY_SCALE).replace(/0+$/, '')
  const [whole, fraction = ''] = fixed.split('.')
  return `${whole}.${fraction.padEnd(2, '0')}`
}
