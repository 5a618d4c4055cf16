import type { LanguageModelV3FunctionTool } from '@ai-sdk/provider'
import { PLATFORM_MARKUP_PERCENT } from '../domain/catalogue/apply-markup.ts'
import { historyAllowance, inputBudget } from '../domain/context/input-budget.ts'
import { describePackedOrdinals } from '../domain/context/packed-ordinals.ts'
import {
  ContextTooLargeError,
  IdempotencyKeyReusedError,
  NotFoundError,
  RetryNotAllowedError,
  UnknownToolUseIdError,
} from '../domain/errors.ts'
import type { PartBody } from '../domain/parts.ts'
import { closePendingCalls, type PendingCall } from '../domain/turns/close-pending-calls.ts'
import { coerceReasoningEffort, type TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import { saturatingAdd } from '../domain/tokens/estimate-tokens.ts'
import type { ContextPart } from '../providers/context-part.ts'
import { extendConversion, promptOf } from '../providers/convert-to-provider-prompt.ts'
import { rememberPromptEstimate } from '../providers/estimate-prompt-tokens.ts'
import { mapReasoningEffort } from '../providers/map-reasoning-effort.ts'
import type { NewPart } from '../store/parts.ts'
import type { ResolvedConfiguration } from '../store/config-resolution.ts'
import type { RunStatus } from '../store/runs.ts'
import { RunChannel } from './run-channel.ts'
import type { RunDeps } from './run-deps.ts'
import { affordableMaxTokens } from './affordable-max-tokens.ts'
import type { Admission, Submission } from './turn-types.ts'

/** What the chat actor knows of its chat when a submission arrives. */
export type ChatFacts = {
  pendingCalls: PendingCall[]
  latestCustomerRun: { id: string; status: RunStatus } | null
}

/**
 * Decides whether a turn may run and, if so, writes it: tombstones for unanswered calls, the input
 * parts, the run and the idempotency key, in one transaction, committed before it resolves, so
 * before any byte is streamed. Rejects with the domain error that refuses it; a refusal writes nothing.
 */
export async function admitTurn(deps: RunDeps, chat: ChatFacts, submission: Submission): Promise<Admission> {
  const { store } = deps
  const { request, model, orgId } = submission
  const now = deps.now()

  if (request.retry_of) checkRetry(deps, chat, submission, request.retry_of)
  if (request.idempotency_key) {
    const earlier = store.idempotencyKeys.runOf(orgId, request.idempotency_key, now)
    if (earlier) throw new IdempotencyKeyReusedError(earlier)
  }

  const answered = submission.input.flatMap((p) => (p.body.type === 'tool_result' ? [p.body.tool_use_id] : []))
  const { closures, unknownIds } = closePendingCalls(chat.pendingCalls, answered, now)
  if (unknownIds.length > 0) {
    throw new UnknownToolUseIdError(`no pending tool call in this chat has id ${unknownIds.join(', ')}`, {
      tool_use_ids: unknownIds,
      pending: chat.pendingCalls.map((c) => c.tool_use_id),
    })
  }
  const userMetadata = request.user_metadata ?? {}
  const tombstones: PartBody[] = closures.flatMap((c) =>
    c.tombstone === null
      ? []
      : [{ type: 'tool_result', text: '', is_error: true, tool_name: c.tool_name, tool_use_id: c.tool_use_id, trust: 'trusted', tombstone_reason: c.tombstone }],
  )

  // Configuration and budget in force now (a retry uses current configuration too).
  const config = deps.resolver.resolveConfig(orgId, submission.namespace, request.tools ?? null)
  const budget = deps.resolver.resolveBudget(orgId, submission.namespace, model.id)
  const tools = providerToolsOf(config)

  // Packing: for now the whole history when it fits (retention and compaction replace this step).
  const newParts: ContextPart[] = [
    ...tombstones.map((body) => ({ ordinal: Number.MAX_SAFE_INTEGER, body, media: [] })),
    ...submission.input.map((p) => ({ ordinal: Number.MAX_SAFE_INTEGER, body: p.body, media: p.media })),
  ]
  const exchangeTokens = submission.input.reduce((sum, p) => sum + p.tokens, 0)
  const allowance = historyAllowance(model.context_window, budget.budget, config.estimated_tokens + exchangeTokens)
  const history = deps.history.read(submission.chatId)
  const window = inputBudget(model.context_window, budget.budget)
  if (allowance < 0 || history.tokens > allowance) throw contextTooLarge(window, config.estimated_tokens + exchangeTokens + history.tokens)

  // The history's conversion is kept between turns; only this turn's parts are converted here.
  const converted = extendConversion(deps.history.convert(submission.chatId, history, model), newParts, model)
  const prompt = promptOf(config.instructions, converted)
  // config.estimated_tokens counts the instructions and tools as estimatePromptTokens does.
  const estimatedInputTokens = saturatingAdd(config.estimated_tokens, converted.tokens)
  rememberPromptEstimate(prompt, tools, estimatedInputTokens)
  if (estimatedInputTokens > window) throw contextTooLarge(window, estimatedInputTokens)

  const effort = coerceReasoningEffort(request.reasoning_effort, model)
  const translationWarnings: TranslationWarning[] = [...effort.warnings, ...converted.warnings]
  const markupPercent = store.organisations.get(orgId)?.markup_percent ?? PLATFORM_MARKUP_PERCENT
  const maxTokens = affordableMaxTokens(deps, submission, estimatedInputTokens, markupPercent, translationWarnings)
  const vendorReasoning = mapReasoningEffort(model, effort.value, maxTokens)
  translationWarnings.push(...vendorReasoning.warnings)

  const runId = submission.runId
  // Taken now: the history's lists are the kept ones, good until the chat's next read.
  const historySpan = { count: history.parts.length, first: history.parts[0]?.ordinal ?? null, last: history.parts.at(-1)?.ordinal ?? null }
  const leftOut = history.leftOut.slice()
  await store.writes.write(() => {
    // Checked again where it is written: another chat's turn may have taken the key since.
    if (request.idempotency_key) {
      const earlier = store.idempotencyKeys.runOf(orgId, request.idempotency_key, now)
      if (earlier) throw new IdempotencyKeyReusedError(earlier)
    }
    const written = store.parts.append(submission.chatId, [
      ...tombstones.map((body): NewPart => ({ body, runId, userMetadata })),
      ...submission.input.map((p): NewPart => ({ body: p.body, runId, userMetadata, tokens: p.tokens, media: p.media })),
    ])
    const packedCount = historySpan.count + written.length
    const firstPacked = historySpan.first ?? written[0]?.ordinal ?? null
    const lastPacked = written.at(-1)?.ordinal ?? historySpan.last
    const createdAt = now.toISOString()
    store.runs.insert({
      id: runId,
      org_id: orgId,
      chat_id: submission.chatId,
      origin: 'customer',
      model_id: model.id,
      model_name: model.name,
      namespace: submission.namespace,
      api_key_id: submission.apiKeyId,
      retry_of: request.retry_of ?? null,
      created_at: createdAt,
      lease_owner: deps.nodeId,
      lease_expires_at: new Date(now.getTime() + deps.leaseTtlMs).toISOString(),
      manifest: {
        model: model.name,
        model_id: model.id,
        vendor_model_id: model.vendor_model_id,
        config_versions: config.versions,
        budget: { ...budget, input_budget: window },
        packed_ordinals: describePackedOrdinals(packedCount, firstPacked, lastPacked, leftOut),
        estimated_input_tokens: estimatedInputTokens,
        max_tokens: maxTokens,
        reasoning_effort: effort.value,
        vendor_reasoning: vendorReasoning.value.providerOptions,
        markup_percent: markupPercent,
        retry_of: request.retry_of ?? null,
        warnings: { config: [...config.warnings, ...budget.warnings], translation: translationWarnings },
      },
    })
    if (request.idempotency_key) store.idempotencyKeys.record(orgId, request.idempotency_key, runId, now)
  })

  return {
    runId,
    chatId: submission.chatId,
    orgId,
    apiKeyId: submission.apiKeyId,
    namespace: submission.namespace,
    model,
    channel: new RunChannel(runId),
    closedToolCalls: closures.map((c) => c.tool_use_id),
    configWarnings: [...config.warnings, ...budget.warnings],
    translationWarnings,
    prompt,
    tools,
    maxTokens,
    reasoningEffort: effort.value,
    vendorReasoning: vendorReasoning.value,
    estimatedInputTokens,
    isRetry: Boolean(request.retry_of),
    userMetadata,
    markupPercent,
    startedAtMs: Date.now(),
    createdAt: now.toISOString(),
    // The whole history fits or admission refused it above: nothing to summarise.
    compaction: null,
  }
}

// Resolved configurations are shared between turns until configuration changes; so are their tools.
const providerTools = new WeakMap<ResolvedConfiguration, LanguageModelV3FunctionTool[]>()
function providerToolsOf(config: ResolvedConfiguration): LanguageModelV3FunctionTool[] {
  let tools = providerTools.get(config)
  if (!tools) {
    tools = config.tools.map((t) => ({
      type: 'function',
      name: t.name,
      inputSchema: t.input_schema as LanguageModelV3FunctionTool['inputSchema'],
      ...(t.description ? { description: t.description } : {}),
      ...(t.strict === true || t.strict === false ? { strict: t.strict } : {}),
    }))
    providerTools.set(config, tools)
  }
  return tools
}

function checkRetry(deps: RunDeps, chat: ChatFacts, submission: Submission, retryOf: string): void {
  const run = deps.store.runs.get(submission.orgId, retryOf)
  if (!run) throw new NotFoundError(`run ${retryOf} not found`)
  const latest = chat.latestCustomerRun
  if (run.chat_id !== submission.chatId || latest?.id !== run.id || run.status !== 'failed') {
    throw new RetryNotAllowedError(
      `run ${retryOf} is not the latest failed customer run of this chat; only that run can be retried`,
      { run_id: retryOf, latest_run_id: latest?.id ?? null, latest_status: latest?.status ?? null },
    )
  }
}

function contextTooLarge(budget: number, needed: number) {
  return new ContextTooLargeError(
    `the context needs about ${needed} tokens but the model's input budget is ${budget}`,
    { input_budget: budget, estimated_tokens: needed },
    'shorten the input, publish a budget with less headroom, or use a model with a larger context window',
  )
}
