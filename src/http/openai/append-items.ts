import { ValidationError } from '../../domain/errors.ts'
import { estimatePartTokens } from '../../domain/context/estimate-part-tokens.ts'
import { itemsToParts, type InputItem } from '../../domain/openai/request-to-turn.ts'
import type { Item } from '../../domain/openai/part-to-item.ts'
import type { PartBody } from '../../domain/parts.ts'
import type { AppDeps } from '../app-deps.ts'
import { chatLookups, itemsOf } from './facade-reads.ts'

/**
 * Items to add outside a turn, checked against the chat that holds them (null: one yet to be made)
 * before anything is written: refused whole when any item cannot be added.
 */
export function partsOfItems(deps: AppDeps, chatId: string | null, items: InputItem[], pointer: string): PartBody[] {
  const { parts, problems } = itemsToParts(items, chatLookups(deps, chatId), pointer)
  if (problems.length > 0) throw new ValidationError(problems)
  return parts
}

/** Parts written to a chat outside a turn, through its actor (APPEND, decision 055), read back as the items they became. */
export async function appendParts(deps: AppDeps, orgId: string, chatId: string, parts: PartBody[]): Promise<Item[]> {
  if (parts.length === 0) return []
  const ordinals = await deps.host.append(
    orgId,
    chatId,
    parts.map((body) => ({ body, media: [], tokens: estimatePartTokens(body) })),
  )
  return itemsOf(deps.store.parts.between(chatId, ordinals[0]!, ordinals.at(-1)!))
}
