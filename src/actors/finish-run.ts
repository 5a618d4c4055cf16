import type { Admission, RunResult } from './turn-types.ts'
import type { RunDeps } from './run-deps.ts'
import { settleRun } from './settle-run.ts'

/**
 * Settles a run and tells its stream how it ended: `done` after a success (with the settled cost),
 * `error` after a failure or a cancel. A failure before the stream opened was already answered
 * with an HTTP error, so it sends no frame.
 */
export async function finishRun(deps: RunDeps, admission: Admission, result: RunResult): Promise<{ cost: string | null }> {
  const { channel } = admission
  try {
    // Group-committed with other turns' writes; `done` goes out only after the commit.
    const cost = await deps.store.writes.write(() => settleRun(deps, {
      runId: admission.runId,
      orgId: admission.orgId,
      chatId: admission.chatId,
      apiKeyId: admission.apiKeyId,
      namespace: admission.namespace,
      model: admission.model,
      markupPercent: admission.markupPercent,
      status: result.status,
      stopReason: result.stopReason,
      error: result.error?.message ?? null,
      usage: result.usage,
      usageLost: result.usageLost,
      latencyMs: result.latencyMs,
      providerResponseId: result.providerRequestId ?? result.providerResponseId,
      // Cancels and calls refused locally say nothing of the provider's health (spec §2.7); every
      // other ending is a sample, written with the settlement.
      sample:
        result.status === 'cancelled' || result.vendorRequests === 0
          ? undefined
          : { startedAt: new Date(admission.startedAtMs).toISOString(), firstDeltaMs: result.firstDeltaMs },
    }))
    if (result.status === 'succeeded') {
      channel.end('done', {
        compaction: admission.compactionReport,
        cost,
        cost_currency: 'USD',
        model_served: result.modelServed,
        pending_tool_calls: result.pendingToolCalls,
        provider_response_id: result.providerResponseId,
        server_tools: null,
        stop_reason: result.stopReason,
        usage: result.usage,
      })
    } else if (result.status === 'cancelled') {
      channel.open()
      channel.end('error', { code: 'cancelled', message: 'the run was cancelled; its output so far is kept', details: { run_id: admission.runId } })
    } else if (result.streamOpened || channel.opened) {
      // A run that compacted opened its stream before its provider call: a failure then is a frame too.
      channel.open()
      channel.end('error', {
        code: result.error?.code ?? 'upstream_error',
        message: result.error?.message ?? 'the run failed',
        details: { run_id: admission.runId },
        hint: 'send input: [] with retry_of set to this run to try again',
      })
    }
    return { cost }
  } catch (error) {
    channel.open()
    channel.end('error', { code: 'internal', message: 'the run could not be settled', details: { run_id: admission.runId } })
    throw error
  } finally {
    channel.markSettled()
  }
}
