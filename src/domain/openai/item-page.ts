import type { Item } from './part-to-item.ts'

export type ItemPageQuery = { after?: string; limit?: number; order?: 'asc' | 'desc' }
export type ItemPage = { object: 'list'; data: Item[]; first_id: string | null; last_id: string | null; has_more: boolean }

export const ITEM_PAGE_DEFAULT = 20
export const ITEM_PAGE_MAX = 100

/**
 * One page of a list of items, as OpenAI's lists page (`after` an item id, `limit` 1-100, default 20;
 * `order` newest first unless `asc`). An `after` naming no item of the list starts at the beginning.
 */
export function pageOfItems(items: readonly Item[], query: ItemPageQuery): ItemPage {
  const ordered = query.order === 'asc' ? [...items] : [...items].reverse()
  const limit = Math.min(Math.max(query.limit ?? ITEM_PAGE_DEFAULT, 1), ITEM_PAGE_MAX)
  const start = query.after === undefined ? 0 : ordered.findIndex((item) => item.id === query.after) + 1
  const data = ordered.slice(start, start + limit)
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: start + limit < ordered.length }
}
