import { summaryTokens, type BlockSummary } from '../domain/context/render-summary.ts'
import { newId } from '../domain/new-id.ts'
import type { PartBody } from '../domain/parts.ts'
import { compactionPrompt, mergePrompt } from '../providers/compaction-prompt.ts'
import { estimatePromptTokens } from '../providers/estimate-prompt-tokens.ts'
import type { BlockToSummarise } from '../domain/context/block-to-summarise.ts'
import type { CompactionJob } from '../domain/context/compaction-job.ts'
import type { RunDeps } from './run-deps.ts'
import { runOutcome } from '../domain/runs/run-outcome.ts'
import { openRun, settleOrLeaveToSweep, type Settlement } from './run-lifecycle.ts'
import { streamRun } from './stream-run.ts'

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
 * the block's parts, or the summaries it merges (decisions §5.3), streamed by the step customer runs
 * use too (./stream-run.ts), its text blocks kept as the summary. Written `running` before the
 * provider is called; settled, billed as a `compaction` entry and its summary stored in one
 * transaction, so a crash leaves either a settled run with its summary or a running run the sweep
 * fails, never half a summary. Resolves with the summary, or null when the run did not make one
 * (failed or cancelled) or its settlement was left to the sweep (`onRelease` hears of it first).
 */
export async function summariseBlock(
  deps: RunDeps,
  job: CompactionJob,
  block: BlockToSummarise,
  signal: AbortSignal,
  onRelease?: (runId: string) => void,
): Promise<BlockSummary | null> {
  const { store } = deps
  const { prompt, described } = promptFor(deps, job.chatId, block)
  const inputTokens = estimatePromptTokens(prompt)
  const runId = newId()
  const now = deps.now()
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

  /** The text blocks, in order: the summary. Reasoning is not part of it; frames go nowhere (no SSE stream). */
  const texts: string[] = []
  const streamed = await streamRun(deps, {
    runId,
    model: job.model,
    estimatedInputTokens: inputTokens,
    signal,
    sink: {
      frame: () => undefined,
      keep: async (body) => {
        if (body.type === 'message') texts.push(body.text)
        return null
      },
      opened: () => undefined,
      failedBeforeStream: () => undefined,
    },
    options: {
      prompt,
      maxOutputTokens: block.maxTokens,
      providerOptions: {
        // Parley keeps the history: OpenAI keeps nothing of a summary call either (decision 026).
        openai: { store: false },
        sandbox: { compaction: { firstOrdinal: block.firstOrdinal, lastOrdinal: block.lastOrdinal } },
      },
    },
  })
  const text = texts.join('').trim()
  // A finished answer with nothing to store is no summary: the run failed, its usage billed as it stands.
  const outcome =
    streamed.status === 'succeeded' && text === '' ? runOutcome({ ...streamed, status: 'failed', error: { code: 'upstream_error', message: 'the summary came back empty' } }) : streamed
  const summary: BlockSummary | null =
    outcome.status === 'succeeded'
      ? {
          firstOrdinal: block.firstOrdinal,
          lastOrdinal: block.lastOrdinal,
          text,
          tokens: summaryTokens(block.firstOrdinal, block.lastOrdinal, text),
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
    outcome,
  }
  // Settled, billed and its summary stored in one transaction; tried again, then left to the sweep
  // (its lease released, never renewed), as a customer run is (decision 020).
  const settled = await settleOrLeaveToSweep(deps, settlement, {
    alongside: () => {
      if (summary) store.summaries.insert(job.chatId, summary, deps.now().toISOString())
    },
    onRelease,
  })
  if (settled.kind === 'leftToSweep') return null
  return summary
}
