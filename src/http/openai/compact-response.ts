import { PLATFORM_MARKUP_PERCENT } from '../../domain/catalogue/apply-markup.ts'
import { UpstreamError, ValidationError } from '../../domain/errors.ts'
import { compactionItem } from '../../domain/openai/compaction-item.ts'
import { compactionIdOf } from '../../domain/openai/openai-ids.ts'
import type { InputItem } from '../../domain/openai/request-to-turn.ts'
import { usageOf } from '../../domain/openai/response-object.ts'
import { ZERO_USAGE, type Usage } from '../../domain/pricing/usage.ts'
import type { AppDeps } from '../app-deps.ts'
import { inactiveModelError } from '../../providers/catalogue/inactive-model.ts'
import type { TurnCaller } from '../submit-turn.ts'
import { appendParts, partsOfItems } from './append-items.ts'
import { cutAfterRun, previousResponse } from './facade-reads.ts'

/** What a compacted window's summary may spend: enough to keep a long chat's facts, small beside any window. */
export const COMPACT_SUMMARY_MAX_TOKENS = 2048

type CompactBody = { model: string; input?: string | InputItem[]; previous_response_id?: string | null }

/**
 * `POST /v1/responses/compact` (decision 055): the history given (the chat of `previous_response_id`
 * up to that response, then `input`) summarised in one billed compaction run, in a copy of the chat
 * made for the request and deleted after it. The answer's `compaction` item carries the summary; sent
 * as input later, it stands for everything it summarises.
 */
export async function compactResponse(deps: AppDeps, caller: TurnCaller, body: CompactBody, signal: AbortSignal) {
  deps.catalogue.checkVersion()
  const resolved = deps.catalogue.resolve(body.model)
  if (resolved.kind !== 'resolved') throw inactiveModelError(body.model, deps.catalogue.list())
  const items: InputItem[] = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : (body.input ?? [])
  if (items.length === 0 && body.previous_response_id == null) {
    throw new ValidationError([{ in: 'body', pointer: '/input', message: 'nothing to compact: send input, previous_response_id, or both' }])
  }
  const { orgId } = caller
  const previous = body.previous_response_id == null ? null : previousResponse(deps, orgId, body.previous_response_id)
  // Checked before the copy is made: a refused request leaves nothing behind.
  const parts = partsOfItems(deps, previous?.chat.id ?? null, items, '/input')
  // Reasoning and references add nothing: input of nothing but those has nothing to summarise.
  if (parts.length === 0 && previous === null) throw new ValidationError([{ in: 'body', pointer: '/input', message: 'holds no message to compact' }])
  let chat
  if (previous !== null) {
    const upTo = cutAfterRun(deps, previous.run, previous.chat.id)
    chat = await deps.host.fork(orgId, previous.chat.id, { ...(upTo === null ? {} : { upToOrdinal: upTo }), title: null, description: null, userMetadata: {} })
    if (!chat) throw new ValidationError([{ in: 'body', pointer: '/previous_response_id', message: 'its conversation was deleted meanwhile' }])
  } else {
    chat = deps.store.chats.create({ orgId, namespace: null, title: null, description: null, userMetadata: {} })
  }
  try {
    await appendParts(deps, orgId, chat.id, parts)
    const summary = await deps.host.summariseWhole(
      {
        chatId: chat.id,
        orgId,
        apiKeyId: caller.apiKeyId,
        namespace: chat.namespace,
        model: resolved.entry,
        markupPercent: deps.store.organisations.get(orgId)?.markup_percent ?? PLATFORM_MARKUP_PERCENT,
        forRunId: null,
      },
      COMPACT_SUMMARY_MAX_TOKENS,
      signal,
    )
    if (!summary) throw new UpstreamError('the compaction run made no summary; nothing was kept (its usage is billed)')
    const run = deps.store.runs.get(orgId, summary.runId)!
    const usage = run.usage === null ? ZERO_USAGE : (JSON.parse(run.usage) as Usage)
    const id = compactionIdOf(run.id)
    return { id, object: 'response.compaction' as const, created_at: Math.floor(Date.parse(run.created_at) / 1000), output: [compactionItem(id, summary.text)], usage: usageOf(usage) }
  } finally {
    // The copy goes; the compaction run stays, billed, as a deleted chat's runs do.
    await deps.host.delete(orgId, chat.id)
  }
}
