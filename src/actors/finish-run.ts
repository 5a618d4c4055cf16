import { contextRefusedMessage } from '../domain/context/refit.ts'
import { ContextTooLargeError } from '../domain/errors.ts'
import type { RunOutcome } from '../domain/runs/run-outcome.ts'
import type { Admission } from './turn-types.ts'
import type { RunDeps } from './run-deps.ts'
import { commitSettlement } from './run-lifecycle.ts'

/** A customer run's settlement alone: status, usage, cost and balance entry, group-committed with other turns' writes. */
export function writeSettlement(deps: RunDeps, admission: Admission, result: RunOutcome): Promise<string | null> {
  return commitSettlement(deps, {
    runId: admission.runId,
    orgId: admission.orgId,
    chatId: admission.chatId,
    apiKeyId: admission.apiKeyId,
    namespace: admission.namespace,
    model: admission.model,
    markupPercent: admission.markupPercent,
    // The service clock's time of admission (startedAtMs, the wall clock's, times the latency).
    startedAt: admission.createdAt,
    estimatedInputTokens: admission.estimatedInputTokens,
    outcome: result,
  })
}

/**
 * The stream's last frame once the run is settled (`done` goes out only after the commit): `done`
 * after a success (with the settled cost), `error` after a failure or a cancel. A failure before
 * the stream opened was already answered with an HTTP error, so it sends no frame; but a context
 * refusal, which the chat machine may have refitted, is answered here.
 *
 * A settlement that throws leaves the stream as it is: the chat machine tries it again, and when it
 * gives up the run is left to the sweep and its stream ended by `endUnsettled` (decision 020).
 */
export function endStream(admission: Admission, result: RunOutcome, cost: string | null): void {
  const { channel } = admission
  try {
    if (result.status === 'succeeded') {
      channel.end('done', {
        compaction: admission.compactionReport,
        cost,
        cost_currency: 'USD',
        model_served: result.modelServed,
        pending_tool_calls: result.pendingToolCalls.map(({ tool_name, tool_use_id }) => ({ tool_name, tool_use_id })),
        provider_response_id: result.providerResponseId,
        server_tools: null,
        stop_reason: result.stopReason,
        usage: result.usage,
      })
    } else if (result.status === 'cancelled') {
      channel.open()
      // A cancel says so; a run its chat's deletion stopped says that instead (decision 020).
      channel.end(
        'error',
        result.error
          ? { code: result.error.code, message: result.error.message, details: { run_id: admission.runId } }
          : { code: 'cancelled', message: 'the run was cancelled; its output so far is kept', details: { run_id: admission.runId } },
      )
    } else if (result.streamOpened || channel.opened) {
      // A run that compacted opened its stream before its provider call: a failure then is a frame too.
      channel.open()
      channel.end('error', {
        code: result.error?.code ?? 'upstream_error',
        message: result.error?.message ?? 'the run failed',
        details: { run_id: admission.runId },
        hint: 'send input: [] with retry_of set to this run to try again',
      })
    } else if (result.contextRefusal) {
      // Refused for its context again after the refit (docs/decisions/044-context-refusal-refit.md):
      // nothing was told yet, and the answer names the context, not a bare upstream failure.
      channel.failBeforeStream(
        new ContextTooLargeError(
          contextRefusedMessage(result.contextRefusal, admission.refits),
          { run_id: admission.runId, vendor_count: result.contextRefusal.vendorCount, limit: result.contextRefusal.window },
          'send input: [] with retry_of set to this run: it is packed with the correction the refusal taught; or choose a budget with more headroom, or a model with a larger context window',
        ),
      )
    }
  } finally {
    channel.markSettled()
  }
}

/**
 * The stream of a run whose settlement kept failing (decision 020): it ends with an `error` frame
 * (no internals), and the run stays `running` for the sweep, which settles it as `interrupted`.
 */
export function endUnsettled(admission: Admission): void {
  const { channel } = admission
  channel.open()
  channel.end('error', {
    code: 'internal',
    message: 'the run could not be settled; it will be settled as interrupted for the usage known',
    details: { run_id: admission.runId },
  })
  channel.markSettled()
}
