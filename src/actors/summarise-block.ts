import { readFinish } from '../providers/read-finish.ts'
import { describeVendorError } from '../providers/describe-vendor-error.ts'
import { newVendorCallRecord, withVendorCallRecord } from '../providers/vendor-call-record.ts'
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider'
import { summaryTokens, type BlockSummary } from '../domain/context/render-summary.ts'
import { newId } from '../domain/new-id.ts'
import type { PartBody } from '../domain/parts.ts'
import type { Usage } from '../domain/pricing/usage.ts'
import { compactionPrompt, mergePrompt } from '../providers/compaction-prompt.ts'
import { estimatePromptTokens } from '../providers/estimate-prompt-tokens.ts'
import type { BlockToSummarise } from '../domain/context/block-to-summarise.ts'
import type { CompactionJob } from '../domain/context/compaction-job.ts'
import { usageFrom } from './run-stream/order-blocks.ts'
import { mapStopReason } from './map-stop-reason.ts'
import type { RunDeps } from './run-deps.ts'
import { runOutcome, type StopReason, usageKnownSoFar } from '../domain/runs/run-outcome.ts'
import { commitSettlement, leaveToSweep, openRun, type Settlement } from './run-lifecycle.ts'

/** What a compaction run sends: a block's parts, or the summaries a merge reads (all stored, oldest first). */
function promptFor(deps: RunDeps, chatId: string, block: BlockToSummarise) {
  const { store } = deps
  if (block.kind === 'merge') {
    const inputs = block.of.map((range) => store.summaries.ofRange(chatId, range.firstOrdinal, range.lastOrdinal))
    const missing = block.of.find((_, i) => inputs[i] === null)
    if (missing) throw new Error(`the summary of ordinals ${missing.firstOrdinal}-${missing.lastOrdinal} is not stored: nothing to merge`)
    const summaries = inputs as BlockSummary[]
    return {
      prompt: mergePrompt(block.firstOrdinal, block.lastOrdinal, summaries, block.maxTokens),
      described: {
        block: { first_ordinal: block.firstOrdinal, last_ordinal: block.lastOrdinal, parts: block.parts, tokens: summaries.reduce((n, x) => n + x.tokens, 0) },
        merges: summaries.map((x) => ({ first_ordinal: x.firstOrdinal, last_ordinal: x.lastOrdinal, run_id: x.runId })),
      },
    }
  }
  const wanted = new Set(block.ordinals)
  const parts = store.parts
    .bodiesBetween(chatId, block.firstOrdinal, block.lastOrdinal)
    .filter((row) => wanted.has(row.ordinal))
    .map((row) => ({ ordinal: row.ordinal, body: JSON.parse(row.body) as PartBody }))
  return {
    prompt: compactionPrompt(block.firstOrdinal, block.lastOrdinal, parts, block.maxTokens),
    described: { block: { first_ordinal: block.firstOrdinal, last_ordinal: block.lastOrdinal, parts: parts.length, tokens: block.tokens } },
  }
}

/**
 * One compaction run (docs/guide/context.md): `origin: compaction`, the chat's model, our instruction and
 * the block's parts, or the summaries it merges (decisions §5.3). Written `running` before the provider is called; settled, billed as a
 * `compaction` entry and its summary stored in one transaction, so a crash leaves either a settled
 * run with its summary or a running run the sweep fails, never half a summary. Resolves with the
 * summary, or null when the run did not make one (failed or cancelled).
 */
export async function summariseBlock(deps: RunDeps, job: CompactionJob, block: BlockToSummarise, signal: AbortSignal): Promise<BlockSummary | null> {
  const { store } = deps
  const { prompt, described } = promptFor(deps, job.chatId, block)
  const inputTokens = estimatePromptTokens(prompt)
  const runId = newId()
  const now = deps.now()
  const startedAt = Date.now()
  await store.writes.write(() =>
    openRun(deps, {
      id: runId,
      org_id: job.orgId,
      chat_id: job.chatId,
      origin: 'compaction',
      model_id: job.model.id,
      model_name: job.model.name,
      namespace: job.namespace,
      api_key_id: job.apiKeyId,
      retry_of: null,
      created_at: now.toISOString(),
      manifest: {
        purpose: 'compaction',
        model: job.model.name,
        model_id: job.model.id,
        vendor_model_id: job.model.vendor_model_id,
        ...described,
        for_run: job.forRunId,
        estimated_input_tokens: inputTokens,
        max_tokens: block.maxTokens,
        markup_percent: job.markupPercent,
      },
    }),
  )

  let text = ''
  let usage: Usage | null = null
  let stopReason: StopReason | null = null
  let providerResponseId: string | null = null
  let firstDeltaMs: number | null = null
  let reached = false
  let finished = false
  let error: string | null = null
  const vendorCall = newVendorCallRecord()
  try {
    const call = await withVendorCallRecord(vendorCall, () =>
      deps.languageModelFor(job.model).doStream({
        prompt,
        maxOutputTokens: block.maxTokens,
        abortSignal: signal,
        providerOptions: {
          // Parley keeps the history: OpenAI keeps nothing of a summary call either (decision 026).
          openai: { store: false },
          sandbox: { compaction: { firstOrdinal: block.firstOrdinal, lastOrdinal: block.lastOrdinal } },
        },
      }),
    )
    reached = true
    const reader = (call.stream as ReadableStream<LanguageModelV3StreamPart>).getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      if (value.type === 'text-delta') {
        if (firstDeltaMs === null) firstDeltaMs = Date.now() - startedAt
        text += value.delta
      } else if (value.type === 'response-metadata') providerResponseId = value.id ?? providerResponseId
      else if (value.type === 'finish') {
        const finish = readFinish(value)
        finished = finish.saysHowItEnded
        if (finished) stopReason = mapStopReason(value.finishReason)
        if (finish.usageReported) usage = usageFrom(value.usage)
      } else if (value.type === 'error') {
        error = `the provider failed mid-stream: ${describeVendorError(value.error)}`
        break
      }
    }
  } catch (e) {
    if (!signal.aborted) error = `the provider failed${reached ? '' : ' before answering'}: ${describeVendorError(e)}`
  }
  const status = signal.aborted ? 'cancelled' : error === null && finished && text.trim() !== '' ? 'succeeded' : 'failed'
  if (status === 'failed' && error === null) error = finished ? 'the summary came back empty' : 'the provider stream ended without finishing'
  const summary: BlockSummary | null =
    status === 'succeeded'
      ? {
          firstOrdinal: block.firstOrdinal,
          lastOrdinal: block.lastOrdinal,
          text: text.trim(),
          tokens: summaryTokens(block.firstOrdinal, block.lastOrdinal, text.trim()),
          runId,
          ...(block.kind === 'merge' ? { merged: true } : {}),
        }
      : null

  const settlement: Settlement = {
    runId,
    orgId: job.orgId,
    chatId: job.chatId,
    apiKeyId: job.apiKeyId,
    namespace: job.namespace,
    model: job.model,
    markupPercent: job.markupPercent,
    entryType: 'compaction',
    startedAt: now.toISOString(),
    estimatedInputTokens: inputTokens,
    outcome: runOutcome({
      status,
      stopReason,
      error: error === null ? null : { code: 'upstream_error', message: error },
      usage: usage ?? usageKnownSoFar(inputTokens, text, reached),
      usageLost: usage === null,
      providerResponseId,
      latencyMs: Date.now() - startedAt,
      firstDeltaMs,
      streamOpened: reached,
      vendorRequests: vendorCall.requests,
    }),
  }
  try {
    // Settled, billed and its summary stored in one transaction.
    await commitSettlement(deps, settlement, () => {
      if (summary) store.summaries.insert(job.chatId, summary, deps.now().toISOString())
    })
  } catch (e) {
    // Not written: the run is left to the sweep (its lease released, never renewed), as a customer run is (decision 020).
    await leaveToSweep(deps, runId).catch(() => undefined)
    throw e
  }
  return summary
}
