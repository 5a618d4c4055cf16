import type { RunOutcome } from '../../src/domain/runs/run-outcome.ts'
import { ZERO_USAGE } from '../../src/domain/pricing/usage.ts'

/** A run's outcome as a fake streamRun returns it: nothing streamed worth billing, ended as told. */
export const runOutcomeFixture = (status: RunOutcome['status']): RunOutcome => ({
  status,
  stopReason: status === 'succeeded' ? 'end_turn' : null,
  error: status === 'failed' ? { code: 'upstream_error', message: 'boom' } : null,
  usage: ZERO_USAGE,
  providerResponseId: null,
  modelServed: null,
  pendingToolCalls: [],
  latencyMs: 1,
  firstDeltaMs: null,
  streamOpened: true,
  vendorRequests: 1,
  contextRefusal: null,
})
