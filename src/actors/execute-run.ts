import { APICallError, type LanguageModelV3StreamPart } from '@ai-sdk/provider'
import { estimatePartTokens } from '../domain/context/estimate-part-tokens.ts'
import { UpstreamError } from '../domain/errors.ts'
import { requestIdFrom, toolsForVendor } from '../providers/vendor-fidelity.ts'
import { describeVendorError } from '../providers/describe-vendor-error.ts'
import { longContextHeaders } from '../providers/long-context-headers.ts'
import { newVendorCallRecord, withVendorCallRecord } from '../providers/vendor-call-record.ts'
import { createIoPacer } from '../providers/io-pacer.ts'
import { readsRawChunks, usageOfCutStream } from '../providers/reported-usage.ts'
import { recordVendorWarnings } from './record-vendor-warnings.ts'
import { endOfStream, initialRunStream, step, type Step } from './run-stream/order-blocks.ts'
import type { RunDeps } from './run-deps.ts'
import { type PendingToolCall, type RunOutcome, runOutcome, usageKnownSoFar } from '../domain/runs/run-outcome.ts'
import type { Admission } from './turn-types.ts'

export { mergeMetadata } from './run-stream/order-blocks.ts'

/** What the SSE `error` frame and the run say when a closed block could not be written (no internals). */
export const LEDGER_WRITE_FAILED = 'the run\'s output could not be written to the ledger; the blocks before it are kept'

/**
 * Calls the provider and relays its stream: one frame per delta, each closed block written to the
 * ledger as it closes. The ordering of blocks is the pure reducer's (./run-stream/order-blocks.ts);
 * this is its I/O: it reads parts, carries out the effects in order and times the run. Never
 * throws: every ending, including a provider failure, a ledger write failure (`internal`) or a
 * cancel, is returned as a RunOutcome for settlement.
 */
export async function executeRun(deps: RunDeps, admission: Admission, signal: AbortSignal): Promise<RunOutcome> {
  const { channel } = admission
  const started = Date.now()
  const vendorCall = newVendorCallRecord()
  let state = initialRunStream(admission.model.provider)
  let firstDeltaMs: number | null = null
  /** The vendor's request id header (decision 017); the response id stands in when it sent none. */
  let providerRequestId: string | null = null
  /** The tool calls written to the ledger, in order. */
  const pending: PendingToolCall[] = []
  /** Set once a closed block could not be written: nothing more goes to the ledger or the wire. */
  let ledgerFailed = false

  /** Carries out a step's effects in order: a block is in the ledger before its `block_stop` goes out. */
  const apply = async ({ state: next, effects }: Step): Promise<void> => {
    state = next
    if (firstDeltaMs === null && state.emitted !== '') firstDeltaMs = Date.now() - started
    for (const effect of effects) {
      switch (effect.type) {
        case 'frame':
          channel.push(effect.event, effect.data)
          break
        case 'record_warnings':
          // Into the manifest, without holding the stream up for the write.
          recordVendorWarnings(deps, admission.runId, effect.warnings).catch(() => undefined)
          break
        case 'persist': {
          const body = effect.body
          const part = { body, runId: admission.runId, userMetadata: admission.userMetadata, tokens: estimatePartTokens(body) }
          let createdAt: string
          try {
            createdAt = await deps.store.writes.write(() => deps.store.parts.append(admission.chatId, [part])[0]!.created_at)
          } catch {
            ledgerFailed = true
            return
          }
          if (body.type === 'tool_call') pending.push({ tool_name: body.tool_name, tool_use_id: body.tool_use_id, created_at: createdAt })
          break
        }
        default: {
          const unknown: never = effect
          throw new Error(`unknown effect ${JSON.stringify(unknown)}`)
        }
      }
    }
  }

  const result = async (status: RunOutcome['status'], error: RunOutcome['error'], streamOpened: boolean): Promise<RunOutcome> => {
    if (!ledgerFailed) await apply(endOfStream(state))
    // Our failure, not the provider's (docs/guide/errors.md): whatever the stream did, the run failed.
    if (ledgerFailed) {
      status = 'failed'
      error = { code: 'internal', message: LEDGER_WRITE_FAILED }
    }
    return runOutcome({
      status,
      // A success that did not say how it ended ended `end_turn` (runOutcome's rule).
      stopReason: state.stopReason,
      error,
      // Without the vendor's final usage: its counts reported before the end (issue 22), the estimate for the rest.
      usage: state.usage ?? usageOfCutStream(usageKnownSoFar(admission.estimatedInputTokens, state.emitted, streamOpened), state.reportedUsage),
      // Billed for the estimate, reported as lost (docs/guide/runs.md: missing counts are not zero).
      usageLost: state.usage === null,
      providerResponseId: state.providerResponseId,
      // Without the vendor's request id header, the response id stands in (runOutcome's rule).
      providerRequestId,
      modelServed: state.modelServed,
      pendingToolCalls: pending,
      latencyMs: Date.now() - started,
      firstDeltaMs,
      streamOpened,
      vendorRequests: vendorCall.requests,
    })
  }

  let stream: ReadableStream<LanguageModelV3StreamPart>
  try {
    const model = deps.languageModelFor(admission.model)
    const call = await withVendorCallRecord(vendorCall, () => model.doStream({
      prompt: admission.prompt,
      tools: admission.tools.length > 0 ? toolsForVendor(admission.model.provider, admission.tools) : undefined,
      maxOutputTokens: admission.vendorReasoning.maxOutputTokens,
      headers: longContextHeaders(admission.model, admission.window),
      abortSignal: signal,
      // Anthropic's input counts come before the first block but reach the parts only with the finish: read from the raw chunks.
      includeRawChunks: readsRawChunks(admission.model.provider),
      providerOptions: {
        ...admission.vendorReasoning.providerOptions,
        // The chat keys the vendor's prompt cache (OpenAI's routing, the sandbox's simulation).
        // Parley keeps the history: OpenAI keeps nothing and returns its reasoning encrypted (decision 026).
        openai: { ...admission.vendorReasoning.providerOptions.openai, promptCacheKey: admission.chatId, store: false },
        sandbox: { retry: admission.isRetry, cacheKey: admission.chatId },
      },
    }))
    stream = call.stream
    providerRequestId = requestIdFrom(admission.model.provider, call.response?.headers)
  } catch (error) {
    if (APICallError.isInstance(error)) providerRequestId = requestIdFrom(admission.model.provider, error.responseHeaders)
    if (signal.aborted) return result('cancelled', null, false)
    // Nothing sent: the vendor library refused the prompt itself, which says nothing of the vendor (docs/decisions/015-vendor-calls-deadlines-retries-uptime.md).
    const message =
      vendorCall.requests === 0 ? `the vendor library refused the request before sending it: ${describeVendorError(error)}` : `the provider failed before answering: ${describeVendorError(error)}`
    channel.failBeforeStream(new UpstreamError(message, { run_id: admission.runId }, `send input: [] with retry_of: "${admission.runId}" to try this turn again`))
    return result('failed', { code: 'upstream_error', message }, false)
  }
  channel.open()

  const reader = stream.getReader()
  const onAbort = () => void reader.cancel().catch(() => undefined)
  signal.addEventListener('abort', onAbort, { once: true })
  // A burst of parts all ready at once (a vendor's buffered chunks, a long sandbox answer) is relayed
  // in slices, the event loop turning over between them (issue 22): frames keep their order.
  const pace = createIoPacer()
  try {
    for (;;) {
      const { done, value: part } = await reader.read()
      if (done || signal.aborted) break
      await apply(step(state, part))
      if (ledgerFailed || state.failure) break
      await pace()
    }
  } catch (error) {
    if (!signal.aborted) return result('failed', { code: 'upstream_error', message: `the provider stream broke: ${describeVendorError(error)}` }, true)
  } finally {
    signal.removeEventListener('abort', onAbort)
    // A run that ended on an error part leaves the vendor's response unread: drop its connection.
    void reader.cancel().catch(() => undefined)
  }
  if (state.failure) return result('failed', state.failure, true)
  if (signal.aborted) return result('cancelled', null, true)
  // Never call a cut-off answer a success: without its finish the answer may be incomplete.
  if (!state.finished) return result('failed', { code: 'upstream_error', message: 'the provider stream ended without saying how the answer ended: it may be cut off' }, true)
  return result('succeeded', null, true)
}
