import { APICallError, type LanguageModelV4CallOptions, type LanguageModelV4StreamPart } from '@ai-sdk/provider'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import type { PartBody } from '../domain/parts.ts'
import { type RunOutcome, runOutcome, usageKnownSoFar } from '../domain/runs/run-outcome.ts'
import { contextRefusedMessage, type ContextRefusal } from '../domain/context/refit.ts'
import { describeVendorError } from '../providers/describe-vendor-error.ts'
import { readContextRefusalFrom } from '../providers/read-context-refusal.ts'
import { createIoPacer } from '../providers/io-pacer.ts'
import { readsRawChunks, usageOfCutStream } from '../providers/reported-usage.ts'
import { newVendorCallRecord, withVendorCallRecord } from '../providers/vendor-call-record.ts'
import { requestIdFrom } from '../providers/vendor-fidelity.ts'
import { recordVendorWarnings } from './record-vendor-warnings.ts'
import { endOfStream, initialRunStream, step, type Step } from './run-stream/order-blocks.ts'
import type { RunDeps } from './run-deps.ts'

/**
 * What a run does with what its stream makes: a customer run relays its frames and writes its
 * blocks to the ledger (executeRun); a compaction run has no SSE stream and keeps its blocks in
 * memory for the summary (summariseBlock).
 */
export type RunSink = {
  /** A frame for the customer's stream, in order. */
  frame(event: string, data: unknown): void
  /**
   * A closed block, kept before the frame that follows it goes out. Resolves null once kept, or the
   * error that ends the run when it could not be (our failure, not the provider's): nothing more is
   * kept or framed after it.
   */
  keep(body: PartBody): Promise<RunOutcome['error']>
  /** The provider answered: its stream is open. */
  opened(): void
  /** The provider failed before its stream opened; `message` is the run's error. */
  failedBeforeStream(message: string): void
}

export type RunStreamCall = {
  /** The running run, whose manifest gets the vendor package's warnings. */
  runId: string
  model: CatalogueEntry
  /** The provider call as the run builds it; the step adds the abort signal and asks for raw chunks where usage is read from them. */
  options: Omit<LanguageModelV4CallOptions, 'abortSignal' | 'includeRawChunks'>
  /** The packed input as we count it: billed, with the output so far, when the vendor's usage is lost. */
  estimatedInputTokens: number
  signal: AbortSignal
  sink: RunSink
}

/**
 * One run's streaming step, for every run that calls a provider (customer and compaction): calls
 * it, reads its parts through the pure reducer (./run-stream/order-blocks.ts), carries out the
 * effects in order through the sink, paces the relay and times the run. One step so that every run
 * is billed, timed and judged alike: a cut stream for the counts the vendor reported, a stream
 * without its finish never a success, the vendor's request id kept. Never throws: every ending,
 * a provider failure, a block the sink could not keep or a cancel, is returned as a RunOutcome.
 */
export async function streamRun(deps: RunDeps, call: RunStreamCall): Promise<RunOutcome> {
  const { sink, signal } = call
  const started = Date.now()
  const vendorCall = newVendorCallRecord()
  let state = initialRunStream(call.model.provider)
  let firstDeltaMs: number | null = null
  /** The vendor's request id header (decision 017); the response id stands in when it sent none. */
  let providerRequestId: string | null = null
  /** Set once a closed block could not be kept: nothing more is kept or framed. */
  let keepFailure: RunOutcome['error'] = null

  /** Carries out a step's effects in order: a block is kept before its `block_stop` goes out. */
  const apply = async ({ state: next, effects }: Step): Promise<void> => {
    state = next
    if (firstDeltaMs === null && state.emitted !== '') firstDeltaMs = Date.now() - started
    for (const effect of effects) {
      switch (effect.type) {
        case 'frame':
          sink.frame(effect.event, effect.data)
          break
        case 'record_warnings':
          // Into the manifest, without holding the stream up for the write.
          recordVendorWarnings(deps, call.runId, effect.warnings).catch(() => undefined)
          break
        case 'persist':
          keepFailure = await sink.keep(effect.body)
          if (keepFailure) return
          break
        default: {
          const unknown: never = effect
          throw new Error(`unknown effect ${JSON.stringify(unknown)}`)
        }
      }
    }
  }

  const result = async (status: RunOutcome['status'], error: RunOutcome['error'], streamOpened: boolean, contextRefusal: ContextRefusal | null = null): Promise<RunOutcome> => {
    if (!keepFailure) await apply(endOfStream(state))
    // Our failure, not the provider's (docs/guide/errors.md): whatever the stream did, the run failed.
    if (keepFailure) {
      status = 'failed'
      error = keepFailure
    }
    return runOutcome({
      status,
      // A success that did not say how it ended ended `end_turn` (runOutcome's rule).
      stopReason: state.stopReason,
      error,
      // Without the vendor's final usage: its counts reported before the end (issue 22), the estimate for the rest.
      usage: state.usage ?? usageOfCutStream(usageKnownSoFar(call.estimatedInputTokens, state.emitted, streamOpened), state.reportedUsage),
      // Billed for the estimate, reported as lost (docs/guide/runs.md: missing counts are not zero).
      usageLost: state.usage === null,
      providerResponseId: state.providerResponseId,
      // Without the vendor's request id header, the response id stands in (runOutcome's rule).
      providerRequestId,
      modelServed: state.modelServed,
      latencyMs: Date.now() - started,
      firstDeltaMs,
      streamOpened,
      vendorRequests: vendorCall.requests,
      contextRefusal,
    })
  }

  let stream: ReadableStream<LanguageModelV4StreamPart>
  try {
    const model = deps.languageModelFor(call.model)
    const answer = await withVendorCallRecord(vendorCall, () =>
      model.doStream({
        ...call.options,
        abortSignal: signal,
        // Anthropic's input counts come before the first block but reach the parts only with the finish: read from the raw chunks.
        includeRawChunks: readsRawChunks(call.model.provider),
      }),
    )
    stream = answer.stream
    providerRequestId = requestIdFrom(call.model.provider, answer.response?.headers)
  } catch (error) {
    if (APICallError.isInstance(error)) providerRequestId = requestIdFrom(call.model.provider, error.responseHeaders)
    if (signal.aborted) return result('cancelled', null, false)
    // A refusal for the context's size, before any byte: the one failure packing again can cure. The
    // chat machine decides whether it is refitted or told (docs/decisions/044-context-refusal-refit.md),
    // so nothing is told here.
    const refusal = readContextRefusalFrom(error).value
    if (refusal !== null) return result('failed', { code: 'context_too_large', message: contextRefusedMessage(refusal, 0) }, false, refusal)
    // Nothing sent: the vendor library refused the prompt itself, which says nothing of the vendor (docs/decisions/015-vendor-calls-deadlines-retries-uptime.md).
    const message =
      vendorCall.requests === 0 ? `the vendor library refused the request before sending it: ${describeVendorError(error)}` : `the provider failed before answering: ${describeVendorError(error)}`
    sink.failedBeforeStream(message)
    return result('failed', { code: 'upstream_error', message }, false)
  }
  sink.opened()

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
      if (keepFailure || state.failure) break
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
