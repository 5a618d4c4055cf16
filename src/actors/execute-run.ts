import { estimatePartTokens } from '../domain/context/estimate-part-tokens.ts'
import { UpstreamError } from '../domain/errors.ts'
import { toolsForVendor } from '../providers/vendor-fidelity.ts'
import { longContextHeaders } from '../providers/long-context-headers.ts'
import type { RunDeps } from './run-deps.ts'
import { type PendingToolCall, type RunOutcome, runOutcome } from '../domain/runs/run-outcome.ts'
import { streamRun, type RunSink } from './stream-run.ts'
import type { Admission } from './turn-types.ts'

export { mergeMetadata } from './run-stream/order-blocks.ts'

/** What the SSE `error` frame and the run say when a closed block could not be written (no internals). */
export const LEDGER_WRITE_FAILED = 'the run\'s output could not be written to the ledger; the blocks before it are kept'

/**
 * A customer run's stream (./stream-run.ts, the step compaction runs share): the provider called
 * with the admitted turn, one frame per delta relayed to the run's channel, each closed block
 * written to the ledger as it closes, the tool calls written kept for the run's outcome. Never
 * throws: every ending, including a provider failure, a ledger write failure (`internal`) or a
 * cancel, is returned as a RunOutcome for settlement.
 */
export async function executeRun(deps: RunDeps, admission: Admission, signal: AbortSignal): Promise<RunOutcome> {
  const { channel } = admission
  /** The tool calls written to the ledger, in order. */
  const pending: PendingToolCall[] = []
  const sink: RunSink = {
    frame: (event, data) => channel.push(event, data),
    keep: async (body) => {
      const part = { body, runId: admission.runId, userMetadata: admission.userMetadata, tokens: estimatePartTokens(body) }
      let createdAt: string
      try {
        createdAt = await deps.store.writes.write(() => deps.store.parts.append(admission.chatId, [part])[0]!.created_at)
      } catch {
        return { code: 'internal', message: LEDGER_WRITE_FAILED }
      }
      if (body.type === 'tool_call') pending.push({ tool_name: body.tool_name, tool_use_id: body.tool_use_id, created_at: createdAt })
      return null
    },
    opened: () => channel.open(),
    failedBeforeStream: (message) =>
      channel.failBeforeStream(new UpstreamError(message, { run_id: admission.runId }, `send input: [] with retry_of: "${admission.runId}" to try this turn again`)),
  }
  const outcome = await streamRun(deps, {
    runId: admission.runId,
    model: admission.model,
    estimatedInputTokens: admission.estimatedInputTokens,
    signal,
    sink,
    options: {
      prompt: admission.prompt,
      tools: admission.tools.length > 0 ? toolsForVendor(admission.model.provider, admission.tools) : undefined,
      maxOutputTokens: admission.vendorReasoning.maxOutputTokens,
      ...admission.callSettings,
      headers: longContextHeaders(admission.model, admission.window),
      providerOptions: {
        ...admission.vendorReasoning.providerOptions,
        // The chat keys the vendor's prompt cache (OpenAI's routing, the sandbox's simulation).
        // Parley keeps the history: OpenAI keeps nothing and returns its reasoning encrypted (decision 026).
        openai: { ...admission.vendorReasoning.providerOptions.openai, promptCacheKey: admission.chatId, store: false },
        sandbox: { retry: admission.isRetry, cacheKey: admission.chatId },
      },
    },
  })
  // The step knows the blocks kept, not what the ledger dated them: the tool calls settlement reads.
  return runOutcome({ ...outcome, pendingToolCalls: pending })
}
