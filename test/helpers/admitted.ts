import { admissionOf, framesOf, settledOf, type RunChannel } from '../../src/actors/run-channel.ts'

/**
 * A submission's event log read as the actor tests read an admission: its run id, the calls its
 * opening `run` frame says it closed, and a promise of its settlement. Rejects with the refusal.
 */
export async function admitted(log: RunChannel): Promise<{ runId: string; closedToolCalls: string[]; log: RunChannel; channel: { settled: Promise<void> } }> {
  const runId = await admissionOf(log)
  const opening = framesOf(log)[0]!.data as { closed_tool_calls: string[] }
  return { runId, closedToolCalls: opening.closed_tool_calls, log, channel: { settled: settledOf(log) } }
}
