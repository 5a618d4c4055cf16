import type { PartBody } from '../domain/parts.ts'
import { unitsToMoney } from '../domain/money.ts'
import { numberFrames } from '../domain/runs/run-event-ids.ts'
import type { PartRow } from '../store/parts.ts'
import type { RunRow } from '../store/runs.ts'
import { LEDGER_WRITE_FAILED } from './execute-run.ts'
import { openingFrames, type RunFrame } from './run-channel.ts'

type Frame = { event: string; data: unknown }
type Manifest = { warnings?: { config?: unknown[]; translation?: unknown[] } }

/** A persisted output part as the block it streamed as (docs/guide/turn-stream.md); null for the run's input. */
function blockOf(body: PartBody): { start: Record<string, unknown>; kind: string; text: string } | null {
  switch (body.type) {
    case 'message':
      return body.refusal ? { start: { kind: 'refusal' }, kind: 'refusal', text: body.refusal } : { start: { kind: 'text' }, kind: 'text', text: body.text }
    case 'reasoning':
      return { start: { kind: 'reasoning' }, kind: 'reasoning', text: body.text }
    case 'tool_call':
      return { start: { kind: 'tool_call', tool_name: body.tool_name, tool_use_id: body.tool_use_id }, kind: 'tool_input', text: body.arguments }
    default:
      return null
  }
}

/** The stored failure as the stream's `error` event (the live one's code where the row tells it). */
function errorOf(run: RunRow): Frame {
  const details = { run_id: run.id }
  if (run.status === 'cancelled') return { event: 'error', data: { code: 'cancelled', message: run.error ?? 'the run was cancelled; its output so far is kept', details } }
  const message = run.error ?? 'the run failed'
  const code = message === 'interrupted' ? 'interrupted' : message === LEDGER_WRITE_FAILED ? 'internal' : 'upstream_error'
  return { event: 'error', data: { code, message, details, hint: 'send input: [] with retry_of set to this run to try again' } }
}

/**
 * A run's stream rebuilt from the ledger and the run's row (decision 038): the opening frames
 * (the warnings as the manifest recorded them, the vendor's among the translation ones), each
 * output part as one block with its whole text in one delta, then, once the run has ended, `done`
 * from the settled row or `error` from the stored failure. A running run's stream stops after its
 * persisted blocks. Frames are numbered as live (src/domain/runs/run-event-ids.ts), so a live id
 * resumes here.
 *
 * Not stored, so null in a rebuilt `done`: `model_served`, `provider_response_id` and `compaction`.
 */
export function rebuildRunFrames(run: RunRow, parts: readonly PartRow[]): RunFrame[] {
  const bodies = parts.map((p) => JSON.parse(p.body) as PartBody)
  const manifest = JSON.parse(run.manifest) as Manifest
  const frames: Frame[] = openingFrames({
    chatId: run.chat_id,
    runId: run.id,
    closedToolCalls: bodies.flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : [])),
    configWarnings: manifest.warnings?.config ?? [],
    translationWarnings: manifest.warnings?.translation ?? [],
  })
  for (const body of bodies) {
    const block = blockOf(body)
    if (!block) continue
    frames.push({ event: 'block_start', data: block.start })
    if (block.text !== '') frames.push({ event: 'delta', data: { kind: block.kind, text: block.text } })
    frames.push({ event: 'block_stop', data: {} })
  }
  if (run.status === 'succeeded') {
    frames.push({
      event: 'done',
      data: {
        compaction: null,
        cost: run.cost_units === null ? null : unitsToMoney(BigInt(run.cost_units)),
        cost_currency: 'USD',
        model_served: null,
        pending_tool_calls: bodies.flatMap((b) => (b.type === 'tool_call' ? [{ tool_name: b.tool_name, tool_use_id: b.tool_use_id }] : [])),
        provider_response_id: null,
        server_tools: null,
        stop_reason: run.stop_reason ?? 'end_turn',
        usage: run.usage === null ? null : JSON.parse(run.usage),
      },
    })
  } else if (run.status !== 'running') {
    frames.push(errorOf(run))
  }
  return numberFrames(frames)
}
