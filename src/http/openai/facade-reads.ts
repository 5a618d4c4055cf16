import { NotFoundError, PreviousResponseNotFoundError } from '../../domain/errors.ts'
import { isAnswerPart } from '../../domain/openai/answer-items.ts'
import { partToItem } from '../../domain/openai/part-to-item.ts'
import { chatIdOf, compactionIdOf, compactionRunIdOf, itemRefOf, runIdOf, type ItemRef } from '../../domain/openai/openai-ids.ts'
import { carriedMessagesOf, compactionItem, type CompactionItem } from '../../domain/openai/compaction-item.ts'
import type { ContextManifest } from '../../domain/context/context-manifest.ts'
import type { ChatLookups } from '../../domain/openai/request-to-turn.ts'
import { toResponseObject, type ResponseEcho, type ResponseObject } from '../../domain/openai/response-object.ts'
import type { Item, LedgerPart } from '../../domain/openai/part-to-item.ts'
import type { PartBody } from '../../domain/parts.ts'
import type { Usage } from '../../domain/pricing/usage.ts'
import type { ChatRow } from '../../store/chats.ts'
import type { PartRow } from '../../store/parts.ts'
import type { RunRow } from '../../store/runs.ts'
import type { AppDeps } from '../app-deps.ts'

/** What a run made natively (not through the facade) echoes: OpenAI's defaults. */
export const DEFAULT_ECHO: ResponseEcho = {
  instructions: null,
  tools: [],
  tool_choice: 'auto',
  parallel_tool_calls: true,
  temperature: 1,
  top_p: 1,
  max_output_tokens: null,
  max_tool_calls: null,
  reasoning: { effort: null, summary: null },
  text: { format: { type: 'text' }, verbosity: 'medium' },
  metadata: {},
  previous_response_id: null,
  conversation: false,
  background: false,
  store: true,
  truncation: 'auto',
  prompt_cache_key: null,
  safety_identifier: null,
  service_tier: 'default',
  top_logprobs: 0,
  user: null,
}

export function echoOf(manifest: string): ResponseEcho {
  const recorded = (JSON.parse(manifest) as { openai_request?: Partial<ResponseEcho> }).openai_request
  return { ...DEFAULT_ECHO, ...recorded }
}

export const ledgerPartOf = (row: PartRow): LedgerPart => ({ id: row.id, run_id: row.run_id, kind: row.kind, body: JSON.parse(row.body) as PartBody, answer_index: row.answer_index })

/** Ledger rows as items, in the order given: each answer part named by its place in its run's answer (migration 0018). */
export const itemsOf = (rows: readonly PartRow[]): Item[] => rows.map((row) => partToItem(ledgerPartOf(row)))

/** A run as its response, from the ledger: the same document while it runs, once it ended, and on any node. */
export function responseOfRun(deps: AppDeps, run: RunRow): ResponseObject {
  const answer = deps.store.parts.ofRunInChat(run.id, run.chat_id).filter((row) => row.run_id === run.id && isAnswerPart(row))
  const usage = run.usage === null ? null : (JSON.parse(run.usage) as Usage)
  const compaction = compactionOfRun(deps, run)
  return toResponseObject({ ...run, usage }, [...(compaction ? [compaction] : []), ...itemsOf(answer)], echoOf(run.manifest))
}

/** A response stream's compaction item, read when the stream reaches it (its turn's summaries are made by then). */
export const compactionOfRunId = (deps: AppDeps, runId: string) => () => {
  const run = deps.store.runs.getById(runId)
  return run ? compactionOfRun(deps, run) : null
}

type SentContext = Pick<ContextManifest, 'segments' | 'summaries'>
const SENT_AS_IS = new Set(['verbatim', 'truncated'])

/**
 * The `compaction` item of a response whose turn summarised history (decision 058), first in its
 * output; null for any other. It holds the summaries the turn's model was sent, then the rest of
 * what it was sent (the parts sent whole or cut, its input among them) as carried messages, so that,
 * sent back as input, it stands for everything before it. Read from the ledger: a summary or part
 * erased since (decision 056) is not in it.
 */
export function compactionOfRun(deps: AppDeps, run: RunRow): CompactionItem | null {
  const manifest = JSON.parse(run.manifest) as { context?: SentContext; input_ordinals?: { first: number; last: number } | null }
  const context = manifest.context
  if (!context || !context.summaries.some((s) => !s.reused)) return null
  const texts = context.summaries.flatMap((s) => deps.store.summaries.ofRange(run.chat_id, s.first_ordinal, s.last_ordinal)?.text ?? [])
  const ranges = context.segments.filter((s) => SENT_AS_IS.has(s.treatment)).map((s) => [s.first_ordinal, s.last_ordinal] as const)
  if (manifest.input_ordinals) ranges.push([manifest.input_ordinals.first, manifest.input_ordinals.last])
  // A failed run's output is never sent (docs/guide/runs.md), though it lies within a range.
  const failed = new Set(deps.store.runs.failedRunIds(run.chat_id))
  const rows = new Map<number, PartRow>()
  for (const [first, last] of ranges) for (const row of deps.store.parts.between(run.chat_id, first, last)) if (!(isAnswerPart(row) && failed.has(row.run_id!))) rows.set(row.ordinal, row)
  const sent = [...rows.values()].sort((a, b) => a.ordinal - b.ordinal).map((row) => JSON.parse(row.body) as PartBody)
  return compactionItem(compactionIdOf(run.id), texts.join('\n\n'), carriedMessagesOf(sent))
}

/** A customer run of this organisation named by a response id; another's, or none, answers like a missing one. */
export function findResponseRun(deps: AppDeps, orgId: string, responseId: string): RunRow {
  const runId = runIdOf(responseId)
  const run = runId === null ? undefined : deps.store.runs.get(orgId, runId)
  // A response not to be stored is not kept to be read again (its run stays, for billing).
  if (!run || run.origin !== 'customer' || echoOf(run.manifest).store === false) throw new NotFoundError(`Response with id '${responseId}' not found.`)
  return run
}

/** The run `previous_response_id` names, with its chat; a missing response or chat is OpenAI's `previous_response_not_found`. */
export function previousResponse(deps: AppDeps, orgId: string, responseId: string): { run: RunRow; chat: ChatRow } {
  const runId = runIdOf(responseId)
  const run = runId === null ? undefined : deps.store.runs.get(orgId, runId)
  const chat = run && run.origin === 'customer' && echoOf(run.manifest).store !== false ? deps.store.chats.get(orgId, run.chat_id) : undefined
  if (!run || !chat) throw new PreviousResponseNotFoundError(responseId)
  return { run, chat }
}

/**
 * Where a chat is cut to continue from one of its responses (a fork at it, decision 055): after the
 * run's last part in the chat, or after its input when its answer was erased (decision 056); null
 * when the chat holds nothing of it.
 */
export function cutAfterRun(deps: AppDeps, run: RunRow, chatId: string): number | null {
  const last = deps.store.parts.ofRunInChat(run.id, chatId).at(-1)?.ordinal
  // The manifest's ordinals are its own chat's (a fork's copies sit at other ordinals).
  const input = run.chat_id === chatId ? (JSON.parse(run.manifest) as { input_ordinals?: { last: number } | null }).input_ordinals?.last : undefined
  const known = [last, input].filter((o): o is number => o !== undefined)
  return known.length === 0 ? null : Math.max(...known)
}

export function findConversation(deps: AppDeps, orgId: string, conversationId: string): ChatRow {
  const chatId = chatIdOf(conversationId)
  const chat = chatId === null ? undefined : deps.store.chats.get(orgId, chatId)
  if (!chat) throw new NotFoundError(`Conversation with id '${conversationId}' not found.`)
  return chat
}

/** The chat's calls and items, as the request translation asks for them; a chat yet to be made has none. */
export function chatLookups(deps: AppDeps, chatId: string | null): ChatLookups {
  if (chatId === null) return { toolNameOf: () => null, holdsItem: () => false, holdsCompaction: () => false }
  return {
    toolNameOf(callId) {
      const row = deps.store.parts.toolCallOf(chatId, callId)
      return row ? (JSON.parse(row.body) as { tool_name: string }).tool_name : null
    },
    holdsItem: (ref: ItemRef) => rowOfItem(deps, chatId, ref) !== undefined,
    // A response of this chat, or of the chat it was forked from before the fork's cut (its parts are here).
    holdsCompaction(compactionId) {
      const runId = compactionRunIdOf(compactionId)
      return runId !== null && deps.store.parts.ofRunInChat(runId, chatId).length > 0
    },
  }
}

/**
 * The items a run was given, in ledger order: what its admission wrote (closures, input, carried
 * history), by the ordinals its manifest records; for a run recorded without them, its own input parts.
 */
export function inputItemsOf(deps: AppDeps, run: RunRow): Item[] {
  const written = (JSON.parse(run.manifest) as { input_ordinals?: { first: number; last: number } | null }).input_ordinals
  const rows = written
    ? deps.store.parts.between(run.chat_id, written.first, written.last)
    : deps.store.parts.ofRunInChat(run.id, run.chat_id).filter((row) => !isAnswerPart(row))
  return itemsOf(rows)
}

/** The ledger row of this chat an item id names; a made-up, erased or another chat's item answers 404. */
export function findItem(deps: AppDeps, chatId: string, itemId: string): PartRow {
  const ref = itemRefOf(itemId)
  const row = ref === null ? undefined : rowOfItem(deps, chatId, ref)
  if (!row) throw new NotFoundError(`Item with id '${itemId}' not found.`)
  return row
}

/** The ledger row an item id names in this chat; undefined when it names none. */
export function rowOfItem(deps: AppDeps, chatId: string, ref: ItemRef): PartRow | undefined {
  if (ref.kind === 'part') return deps.store.parts.inChat(chatId, ref.partId)
  return deps.store.parts.answerOf(ref.runId, chatId, ref.index)
}
