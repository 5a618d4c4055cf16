import type { components } from './schema.ts'

/**
 * The events of a turn's stream (spec §6), by event name.
 *
 * Written from the wire format (src/http/sse/write-run-stream.ts, src/actors/finish-run.ts) until
 * /openapi.json describes each event; the payloads that already have a schema there are taken from it.
 */
type Schemas = components['schemas']

export type ErrorBody = Schemas['ErrorBody']
export type ConfigWarning = Schemas['ConfigWarning']
export type TranslationWarning = { code: string; message: string; details?: Record<string, unknown> }

export type Usage = {
  input_tokens: number
  output_tokens: number
  reasoning_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
}

export type PendingToolCall = { tool_name: string; tool_use_id: string }

export type StopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'stop_sequence' | 'refusal'

export type BlockStart =
  | { kind: 'text' | 'reasoning' | 'refusal' }
  | { kind: 'tool_call'; tool_name: string; tool_use_id: string }

export type Delta = { kind: 'text' | 'reasoning' | 'tool_input' | 'refusal'; text: string }

export type TurnEventData = {
  run: { chat_id: string; run_id: string; closed_tool_calls: string[] }
  config_warnings: { warnings: ConfigWarning[] }
  translation_warnings: { warnings: TranslationWarning[] }
  compacting: { blocks: number; in_progress_elsewhere: number }
  block_start: BlockStart
  delta: Delta
  block_stop: Record<string, never>
  done: {
    compaction: { blocks_generated: number; blocks_reused: number; in_progress_elsewhere: number } | null
    /** Null while settlement is pending: read the run later for its cost. */
    cost: string | null
    cost_currency: string
    model_served: string | null
    pending_tool_calls: PendingToolCall[]
    provider_response_id: string | null
    server_tools: Record<string, unknown> | null
    stop_reason: StopReason
    usage: Usage
  }
  error: ErrorBody
}

export type TurnEventName = keyof TurnEventData

/** One event of the stream, discriminated by `event`. */
export type TurnEvent = { [E in TurnEventName]: { event: E; data: TurnEventData[E] } }[TurnEventName]

const EVENT_NAMES: ReadonlySet<string> = new Set<TurnEventName>([
  'run',
  'config_warnings',
  'translation_warnings',
  'compacting',
  'block_start',
  'delta',
  'block_stop',
  'done',
  'error',
])

export function isTurnEventName(name: string): name is TurnEventName {
  return EVENT_NAMES.has(name)
}
