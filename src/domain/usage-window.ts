export const USAGE_RANGES = { '24h': 24, '7d': 7 * 24, '30d': 30 * 24, '90d': 90 * 24 } as const
export type UsageRange = keyof typeof USAGE_RANGES

const HOUR_MS = 3_600_000

/** docs/guide/billing-and-usage.md: `to` is the start of the next whole hour after now; `from` is `to` minus the range. */
export function usageWindow(range: UsageRange, now: Date): { from: string; to: string } {
  const to = (Math.floor(now.getTime() / HOUR_MS) + 1) * HOUR_MS
  return { from: new Date(to - USAGE_RANGES[range] * HOUR_MS).toISOString(), to: new Date(to).toISOString() }
}
