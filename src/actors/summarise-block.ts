import { summaryTokens, type BlockSummary } from '../domain/context/render-summary.ts'
import { newId } from '../domain/new-id.ts'
import type { PartBody } from '../domain/parts.ts'
import { compactionPrompt, mergePrompt, transcriptText } from '../providers/compaction-prompt.ts'
import { compactionEstimateLimit, compactionFits, compactionInputLimit, compactionMaxTokens, textShares } from '../domain/context/fit-compaction-input.ts'
import { correctedTokens } from '../domain/context/model-limits.ts'
import { estimateTokens } from '../domain/tokens/estimate-tokens.ts'
import { estimatePromptTokens } from '../providers/estimate-prompt-tokens.ts'
import type { BlockToSummarise } from '../domain/context/block-to-summarise.ts'
import type { CompactionJob } from '../domain/context/compaction-job.ts'
import type { RunDeps } from './run-deps.ts'
import { runOutcome } from '../domain/runs/run-outcome.ts'
import { openRun, settleOrLeaveToSweep, type Settlement } from './run-lifecycle.ts'
import { streamRun } from './stream-run.ts'

/** What a compaction run reads: a merge's summaries (all stored, oldest first), or a block's packable parts. */
function inputsOf(deps: RunDeps, chatId: string, block: BlockToSummarise) {
  const { store } = deps
  if (block.kind === 'merge') {
    const inputs = block.of.map((range) => store.summaries.ofRange(chatId, range.firstOrdinal, range.lastOrdinal))
    const missing = block.of.find((_, i) => inputs[i] === null)
    if (missing) throw new Error(`the summary of ordinals ${missing.firstOrdinal}-${missing.lastOrdinal} is not stored: nothing to merge`)
    return { kind: 'merge' as const, summaries: inputs as BlockSummary[] }
  }
  const wanted = new Set(block.ordinals)
  const parts = store.parts
    .bodiesBetween(chatId, block.firstOrdinal, block.lastOrdinal)
    .filter((row) => wanted.has(row.ordinal))
    .map((row) => ({ ordinal: row.ordinal, body: JSON.parse(row.body) as PartBody }))
  return { kind: 'block' as const, parts }
}

/** Attempts at shrinking the shares when the cut texts count a few tokens more than their shares (BPE joins at the cuts). */
const FIT_ATTEMPTS = 8

/**
 * The prompt of a compaction run, fitted to its model (decision 043): sent whole when it fits;
 * otherwise each long text (a part of the block, or a summary a merge reads) is cut to its share of
 * the room the window leaves, head and tail with a visible marker, the shortest kept whole. The
 * prompt is measured after each cut, as the vendor will count it, and cut further until it fits.
 */
function fittedPrompt(deps: RunDeps, job: CompactionJob, block: BlockToSummarise, correction: number) {
  const maxTokens = compactionMaxTokens(job.model, block.maxTokens)
  const limit = compactionEstimateLimit(job.model, maxTokens, correction)
  const inputs = inputsOf(deps, job.chatId, block)
  const build = (keep: readonly (number | null)[]) =>
    inputs.kind === 'merge' ? mergePrompt(block.firstOrdinal, block.lastOrdinal, inputs.summaries, maxTokens, keep) : compactionPrompt(block.firstOrdinal, block.lastOrdinal, inputs.parts, maxTokens, keep)
  const texts = inputs.kind === 'merge' ? inputs.summaries.map((x) => x.text) : inputs.parts.map((p) => transcriptText(p.body))
  let prompt = build([])
  let estimated = estimatePromptTokens(prompt)
  let cut = 0
  // Judged as the vendor counts (times the correction, rounded up), not against the floored estimate limit alone.
  const over = () => !compactionFits(job.model, estimated, maxTokens, correction)
  if (over()) {
    // What the run costs with every text cut to nothing but its marker: the instruction, the headers, the markers.
    const frame = estimatePromptTokens(build(texts.map(() => 0)))
    const tokens = texts.map((t) => estimateTokens(t))
    let room = limit - frame
    for (let attempt = 0; attempt < FIT_ATTEMPTS && over() && room >= 0; attempt++) {
      const keep = textShares(tokens, room)
      prompt = build(keep)
      estimated = estimatePromptTokens(prompt)
      cut = keep.filter((k) => k !== null).length
      room -= Math.max(1, estimated - limit)
    }
    // Only a window smaller than our instruction and the headers of the block's parts gets here: no cut makes it fit.
    if (over()) throw new Error(`the compaction run of ordinals ${block.firstOrdinal}-${block.lastOrdinal} does not fit ${job.model.name}'s window even cut (${estimated} > ${limit} estimated tokens)`)
  }
  const fit = { input_limit: compactionInputLimit(job.model, maxTokens), correction, corrected_input_tokens: correctedTokens(estimated, correction), cut_items: cut }
  const described =
    inputs.kind === 'merge'
      ? {
          block: { first_ordinal: block.firstOrdinal, last_ordinal: block.lastOrdinal, parts: block.parts, tokens: inputs.summaries.reduce((n, x) => n + x.tokens, 0) },
          merges: inputs.summaries.map((x) => ({ first_ordinal: x.firstOrdinal, last_ordinal: x.lastOrdinal, run_id: x.runId })),
          fit,
        }
      : { block: { first_ordinal: block.firstOrdinal, last_ordinal: block.lastOrdinal, parts: inputs.parts.length, tokens: block.tokens }, fit }
  return { prompt, estimated, maxTokens, described }
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
  // The correction packing applies to this model (decision 027): the run must fit as the vendor counts it.
  const correction = store.tokenCorrections.correctionFor(job.model.id).correction
  const { prompt, estimated: inputTokens, maxTokens, described } = fittedPrompt(deps, job, block, correction)
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
        max_tokens: maxTokens,
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
      maxOutputTokens: maxTokens,
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
  const sources = block.kind === 'block' ? { parts: block.ordinals } : { merges: block.of }
  let stored: BlockSummary | null = null
  const settled = await settleOrLeaveToSweep(deps, settlement, {
    alongside: () => {
      if (!summary) return
      // Refused when a source was erased meanwhile (docs/decisions/056-erasing-items.md): the run is
      // billed all the same, and no turn sends what it says. Already there: the stored one is the block's.
      stored = store.summaries.insert(job.chatId, summary, deps.now().toISOString(), sources) ? summary : store.summaries.ofRange(job.chatId, summary.firstOrdinal, summary.lastOrdinal)
    },
    onRelease,
  })
  if (settled.kind === 'leftToSweep') return null
  return stored
}
