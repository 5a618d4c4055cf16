import type { TombstoneReason } from '../parts.ts'

export const TOOL_CALL_TTL_MS = 24 * 3600 * 1000

export type PendingCall = {
  tool_use_id: string
  tool_name: string
  created_at: string
  /** Status of the run that made the call. */
  run_status: 'succeeded' | 'failed' | 'cancelled' | 'running'
}

export type Closure = { tool_use_id: string; tool_name: string; tombstone: TombstoneReason | null }

/**
 * docs/guide/tool-calls.md: a submission closes every pending call, by its own tool_result or else with a
 * tombstone: `expired` past the TTL, `cancelled` when the calling run was cancelled or failed,
 * `abandoned` otherwise. Results for ids that are not pending are reported as unknown.
 */
export function closePendingCalls(
  pending: PendingCall[],
  answeredIds: string[],
  now: Date,
): { closures: Closure[]; unknownIds: string[] } {
  const pendingIds = new Set(pending.map((p) => p.tool_use_id))
  const answered = new Set(answeredIds)
  const closures = pending.map((call): Closure => {
    if (answered.has(call.tool_use_id)) return { tool_use_id: call.tool_use_id, tool_name: call.tool_name, tombstone: null }
    return { tool_use_id: call.tool_use_id, tool_name: call.tool_name, tombstone: tombstoneReason(call, now) }
  })
  return { closures, unknownIds: answeredIds.filter((id) => !pendingIds.has(id)) }
}

function tombstoneReason(call: PendingCall, now: Date): TombstoneReason {
  if (now.getTime() - new Date(call.created_at).getTime() > TOOL_CALL_TTL_MS) return 'expired'
  if (call.run_status === 'failed' || call.run_status === 'cancelled') return 'cancelled'
  return 'abandoned'
}
