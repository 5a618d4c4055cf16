/** Out-of-range page sizes are clamped, never rejected (docs/guide/chats-and-ledger.md). */
export function clampLimit(requested: number | undefined, max: number, fallback = max): number {
  if (requested === undefined) return fallback
  return Math.min(max, Math.max(1, Math.trunc(requested)))
}

export const CHAT_PAGE_MAX = 100
export const CHAT_PAGE_DEFAULT = 20
export const HISTORY_PAGE_MAX = 100
export const HISTORY_PAGE_MAX_FULL = 20
