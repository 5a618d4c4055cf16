import { APICallError, type LanguageModelV3StreamPart, type SharedV3ProviderMetadata } from '@ai-sdk/provider'
import { estimatePartTokens } from '../domain/context/estimate-part-tokens.ts'
import { UpstreamError } from '../domain/errors.ts'
import type { PartBody } from '../domain/parts.ts'
import type { Usage } from '../domain/pricing/usage.ts'
import { estimateTokens } from '../domain/tokens/estimate-tokens.ts'
import { requestIdFrom, toolsForVendor, vendorWarning } from '../providers/vendor-fidelity.ts'
import { describeVendorError } from '../providers/describe-vendor-error.ts'
import { readFinish } from '../providers/read-finish.ts'
import { newVendorCallRecord, withVendorCallRecord } from '../providers/vendor-call-record.ts'
import { mapStopReason } from './map-stop-reason.ts'
import { recordVendorWarnings } from './record-vendor-warnings.ts'
import type { RunDeps } from './run-deps.ts'
import type { Admission, PendingToolCall, RunResult } from './turn-types.ts'

type OpenBlock =
  | { kind: 'text' | 'refusal'; id: string; text: string }
  /** `metadata`: the vendor's replay data for its reasoning (a thinking signature), merged from the block's parts. */
  | { kind: 'reasoning'; id: string; text: string; metadata?: Record<string, Record<string, unknown>> }
  | { kind: 'tool_call'; id: string; toolName: string; text: string }

const describe = describeVendorError

/**
 * Calls the provider and relays its stream: one frame per delta, each closed block written to the
 * ledger as it closes. Never throws: every ending, including a provider failure or a cancel, is
 * returned as a RunResult for settlement.
 */
export async function executeRun(deps: RunDeps, admission: Admission, signal: AbortSignal): Promise<RunResult> {
  const { channel } = admission
  const started = Date.now()
  let firstDeltaMs: number | null = null
  let providerResponseId: string | null = null
  /** The vendor's request id header (decision 017); the response id stands in when it sent none. */
  let providerRequestId: string | null = null
  let modelServed: string | null = null
  let usage: Usage | null = null
  let stopReason: RunResult['stopReason'] = null
  /** Whether the provider said how the answer ended: a stream that just stops may have been cut off. */
  let finished = false
  let emitted = ''
  const pending: PendingToolCall[] = []
  const open = new Map<string, OpenBlock>()
  const vendorCall = newVendorCallRecord()

  // `block_stop` is sent once the block's part is committed: a closed block on the wire is in the ledger.
  const persist = async (body: PartBody) => {
    const part = { body, runId: admission.runId, userMetadata: admission.userMetadata, tokens: estimatePartTokens(body) }
    await deps.store.writes.write(() => deps.store.parts.append(admission.chatId, [part]))
  }

  // The wire carries one block at a time, but a provider may overlap its blocks (DeepSeek starts its
  // text before it ends its reasoning; parallel tool calls). Blocks go out in the order they started:
  // each waits, gathering its deltas, until the blocks before it have stopped, and is announced with
  // its first text.
  const wire: OpenBlock[] = []
  const ended = new Set<OpenBlock>()
  let announced: OpenBlock | null = null

  const announce = (block: OpenBlock) => {
    announced = block
    channel.push('block_start', block.kind === 'tool_call' ? { kind: 'tool_call', tool_name: block.toolName, tool_use_id: block.id } : { kind: block.kind })
    if (block.text !== '') channel.push('delta', { kind: block.kind === 'tool_call' ? 'tool_input' : block.kind, text: block.text })
  }

  const persistBlock = async (block: OpenBlock) => {
    switch (block.kind) {
      case 'text':
        await persist({ type: 'message', text: block.text })
        break
      case 'refusal':
        await persist({ type: 'message', text: '', refusal: block.text })
        break
      case 'reasoning':
        // Replay data is stored with the part, with the vendor that made it (decision 017).
        await persist(
          block.metadata
            ? { type: 'reasoning', text: block.text, replay: { provider: admission.model.provider, metadata: block.metadata } }
            : { type: 'reasoning', text: block.text },
        )
        break
      case 'tool_call':
        await persist({ type: 'tool_call', arguments: block.text, tool_name: block.toolName, tool_use_id: block.id })
        pending.push({ tool_name: block.toolName, tool_use_id: block.id })
        break
      default: {
        const unknown: never = block
        throw new Error(`unknown block ${JSON.stringify(unknown)}`)
      }
    }
  }

  /** Stops the ended blocks at the head of the wire, in order, then announces the next one if it has text. */
  const drain = async () => {
    while (wire[0] && ended.has(wire[0])) {
      const block = wire.shift()!
      ended.delete(block)
      if (announced !== block) announce(block)
      await persistBlock(block)
      channel.push('block_stop', {})
      announced = null
    }
    if (wire[0] && announced !== wire[0] && wire[0].text !== '') announce(wire[0])
  }

  const closeBlock = async (block: OpenBlock) => {
    open.delete(block.id)
    ended.add(block)
    await drain()
  }

  const startBlock = (block: OpenBlock) => {
    open.set(block.id, block)
    wire.push(block)
  }

  const delta = (id: string, text: string) => {
    const block = open.get(id)
    if (!block || text === '') return
    if (firstDeltaMs === null) firstDeltaMs = Date.now() - started
    block.text += text
    emitted += text
    if (block !== wire[0]) return
    if (announced === block) channel.push('delta', { kind: block.kind === 'tool_call' ? 'tool_input' : block.kind, text })
    else announce(block)
  }

  const result = async (status: RunResult['status'], error: RunResult['error'], streamOpened: boolean): Promise<RunResult> => {
    // Whatever was open when the stream ended is kept: the customer saw it streamed, or it was
    // waiting its turn. A block with nothing in it was never announced and is dropped.
    for (const block of [...open.values()]) {
      open.delete(block.id)
      if (block.text !== '') ended.add(block)
      else wire.splice(wire.indexOf(block), 1)
    }
    await drain()
    return {
      status,
      stopReason: status === 'succeeded' ? stopReason ?? 'end_turn' : stopReason,
      error,
      usage: usage ?? estimatedUsage(admission.estimatedInputTokens, emitted, streamOpened),
      // Billed for the estimate, reported as lost (spec §2.8: missing counts are not zero).
      usageLost: usage === null,
      providerResponseId,
      providerRequestId: providerRequestId ?? providerResponseId,
      modelServed,
      pendingToolCalls: pending,
      latencyMs: Date.now() - started,
      firstDeltaMs,
      streamOpened,
      vendorRequests: vendorCall.requests,
    }
  }

  const keepMetadata = (id: string, metadata: SharedV3ProviderMetadata | undefined) => {
    const block = open.get(id)
    if (metadata && block?.kind === 'reasoning') block.metadata = mergeMetadata(block.metadata, metadata)
  }

  let stream: ReadableStream<LanguageModelV3StreamPart>
  try {
    const model = deps.languageModelFor(admission.model)
    const call = await withVendorCallRecord(vendorCall, () => model.doStream({
      prompt: admission.prompt,
      tools: admission.tools.length > 0 ? toolsForVendor(admission.model.provider, admission.tools) : undefined,
      maxOutputTokens: admission.vendorReasoning.maxOutputTokens,
      abortSignal: signal,
      providerOptions: {
        ...admission.vendorReasoning.providerOptions,
        // The chat keys the vendor's prompt cache (OpenAI's routing, the sandbox's simulation).
        openai: { ...admission.vendorReasoning.providerOptions.openai, promptCacheKey: admission.chatId },
        sandbox: { retry: admission.isRetry, cacheKey: admission.chatId },
      },
    }))
    stream = call.stream
    providerRequestId = requestIdFrom(admission.model.provider, call.response?.headers)
  } catch (error) {
    if (APICallError.isInstance(error)) providerRequestId = requestIdFrom(admission.model.provider, error.responseHeaders)
    if (signal.aborted) return result('cancelled', null, false)
    // Nothing sent: the vendor library refused the prompt itself, which says nothing of the vendor (spec §2.7).
    const message =
      vendorCall.requests === 0 ? `the vendor library refused the request before sending it: ${describe(error)}` : `the provider failed before answering: ${describe(error)}`
    channel.failBeforeStream(new UpstreamError(message, { run_id: admission.runId }, 'send the same turn again with retry_of'))
    return result('failed', { code: 'upstream_error', message }, false)
  }
  channel.open()

  const reader = stream.getReader()
  const onAbort = () => void reader.cancel().catch(() => undefined)
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    for (;;) {
      const { done, value: part } = await reader.read()
      if (done || signal.aborted) break
      switch (part.type) {
        case 'stream-start':
          // The vendor package's own warnings about the request, before any content (decision 017).
          if (part.warnings.length > 0) {
            const warnings = part.warnings.map((w) => vendorWarning(admission.model.provider, w))
            channel.push('translation_warnings', { warnings })
            // Into the manifest too, without holding the stream up for the write.
            recordVendorWarnings(deps, admission.runId, warnings).catch(() => undefined)
          }
          break
        case 'response-metadata':
          providerResponseId = part.id ?? providerResponseId
          modelServed = part.modelId ?? modelServed
          break
        case 'text-start': {
          const refusal = (part.providerMetadata?.sandbox as { refusal?: boolean } | undefined)?.refusal === true
          startBlock({ kind: refusal ? 'refusal' : 'text', id: part.id, text: '' })
          break
        }
        case 'reasoning-start':
          startBlock({ kind: 'reasoning', id: part.id, text: '', ...(part.providerMetadata ? { metadata: mergeMetadata(undefined, part.providerMetadata) } : {}) })
          break
        case 'tool-input-start':
          startBlock({ kind: 'tool_call', id: part.id, toolName: part.toolName, text: '' })
          break
        case 'text-delta':
        case 'reasoning-delta':
        case 'tool-input-delta':
          // Anthropic's signature comes as a reasoning delta with no text.
          if (part.type === 'reasoning-delta') keepMetadata(part.id, part.providerMetadata)
          delta(part.id, part.delta)
          break
        case 'text-end':
        case 'reasoning-end': {
          if (part.type === 'reasoning-end') keepMetadata(part.id, part.providerMetadata)
          const block = open.get(part.id)
          if (block) await closeBlock(block)
          break
        }
        case 'tool-input-end':
          break
        case 'tool-call': {
          // The call's final arguments; some providers send only this, without input deltas.
          const block = open.get(part.toolCallId) ?? { kind: 'tool_call' as const, id: part.toolCallId, toolName: part.toolName, text: '' }
          if (!open.has(block.id)) startBlock(block)
          if (block.text === '') delta(block.id, part.input)
          else block.text = part.input
          await closeBlock(block)
          break
        }
        case 'finish': {
          const finish = readFinish(part)
          finished = finish.saysHowItEnded
          if (finished) stopReason = mapStopReason(part.finishReason)
          if (finish.usageReported) usage = usageFrom(part.usage)
          break
        }
        case 'error': {
          const message = `the provider failed mid-stream: ${describe(part.error)}`
          // decisions §3 has one code for a provider that failed: the SSE error carries it too.
          return result('failed', { code: 'upstream_error', message }, true)
        }
        default:
          break
      }
    }
  } catch (error) {
    if (!signal.aborted) return result('failed', { code: 'upstream_error', message: `the provider stream broke: ${describe(error)}` }, true)
  } finally {
    signal.removeEventListener('abort', onAbort)
    // A run that ended on an error part leaves the vendor's response unread: drop its connection.
    void reader.cancel().catch(() => undefined)
  }
  if (signal.aborted) return result('cancelled', null, true)
  // Never call a cut-off answer a success: without its finish the answer may be incomplete.
  if (!finished) return result('failed', { code: 'upstream_error', message: 'the provider stream ended without saying how the answer ended: it may be cut off' }, true)
  return result('succeeded', null, true)
}

export function usageFrom(u: { inputTokens: { total?: number; noCache?: number; cacheRead?: number; cacheWrite?: number }; outputTokens: { total?: number; reasoning?: number } }): Usage {
  const cacheRead = u.inputTokens.cacheRead ?? 0
  const cacheWrite = u.inputTokens.cacheWrite ?? 0
  return {
    input_tokens: u.inputTokens.noCache ?? Math.max(0, (u.inputTokens.total ?? 0) - cacheRead - cacheWrite),
    output_tokens: u.outputTokens.total ?? 0,
    reasoning_tokens: u.outputTokens.reasoning ?? 0,
    cache_read_tokens: cacheRead,
    cache_write_tokens: cacheWrite,
  }
}

/** When the provider reported no usage (failure, cancel): the packed input and what was emitted. */
export function estimatedUsage(inputTokens: number, emitted: string, reachedProvider: boolean): Usage {
  return {
    input_tokens: reachedProvider ? inputTokens : 0,
    output_tokens: estimateTokens(emitted),
    reasoning_tokens: 0,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
  }
}

/** A reasoning block's provider metadata so far, with a later part's merged in, vendor by vendor. */
export function mergeMetadata(
  into: Record<string, Record<string, unknown>> | undefined,
  metadata: SharedV3ProviderMetadata,
): Record<string, Record<string, unknown>> {
  const merged: Record<string, Record<string, unknown>> = { ...into }
  for (const [vendor, values] of Object.entries(metadata)) {
    if (values === null || typeof values !== 'object') continue
    merged[vendor] = { ...merged[vendor], ...values }
  }
  return merged
}
