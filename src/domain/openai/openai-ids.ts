/**
 * The facade's identifiers (docs/decisions/055-openai-facade.md): OpenAI's prefixed ids over Parley's
 * UUIDs, reversible without a lookup table. `resp_` names a run, `conv_` a chat, and an item's prefix
 * says its type: `msg_`, `fc_` (a tool call), `fco_` (its output), `rs_` (reasoning). An item a run
 * answered with is named by the run and its place in the answer (`msg_<run>_0`), which the stream
 * knows before the ledger writes the part; any other item by its ledger part; a `compaction` item
 * (`cmp_`) by its run. The 32 hex digits are a UUID without its dashes.
 */
export const ITEM_PREFIXES = ['msg', 'fc', 'fco', 'rs'] as const
export type ItemPrefix = (typeof ITEM_PREFIXES)[number]

const HEX32 = /^[0-9a-f]{32}$/

const compact = (uuid: string) => uuid.replaceAll('-', '')
const expand = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`

function parse(prefix: string, id: string): string | null {
  if (!id.startsWith(`${prefix}_`)) return null
  const hex = id.slice(prefix.length + 1)
  return HEX32.test(hex) ? expand(hex) : null
}

export const responseIdOf = (runId: string) => `resp_${compact(runId)}`
/** The run a response id names, or null when it is not one of this server's response ids. */
export const runIdOf = (responseId: string) => parse('resp', responseId)

/**
 * A compaction item's id, named by the run it came with: a response whose turn summarised history
 * (`cmp_<run>`, its output's first item), or the compaction run of POST /v1/responses/compact.
 */
export const compactionIdOf = (runId: string) => `cmp_${compact(runId)}`
/** The run a compaction item's id names, or null when it is not one of this server's. */
export const compactionRunIdOf = (compactionId: string) => parse('cmp', compactionId)

export const conversationIdOf = (chatId: string) => `conv_${compact(chatId)}`
export const chatIdOf = (conversationId: string) => parse('conv', conversationId)

/** An item of a response's output: the run, and the block's place among the run's output (known while it streams). */
export const outputItemIdOf = (prefix: ItemPrefix, runId: string, index: number) => `${prefix}_${compact(runId)}_${index}`
/** Any other item (input, carried history, a closed call's tombstone): the ledger part's id. */
export const partItemIdOf = (prefix: ItemPrefix, partId: string) => `${prefix}_${compact(partId)}`

export type ItemRef = { kind: 'output'; runId: string; index: number } | { kind: 'part'; partId: string }

const ITEM_ID = /^(msg|fc|fco|rs)_([0-9a-f]{32})(?:_(\d{1,6}))?$/

/** What an item id names, whatever its type prefix; null when it is not one of this server's item ids. */
export function itemRefOf(itemId: string): ItemRef | null {
  const match = ITEM_ID.exec(itemId)
  if (!match) return null
  const uuid = expand(match[2]!)
  return match[3] === undefined ? { kind: 'part', partId: uuid } : { kind: 'output', runId: uuid, index: Number(match[3]) }
}
