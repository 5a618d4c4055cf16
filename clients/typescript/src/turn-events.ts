import type { components, paths } from './schema.ts'

type Schemas = components['schemas']

/**
 * The events of a turn's stream (docs/guide/turn-stream.md) as /openapi.json describes them: the
 * turn's 200 `text/event-stream` is the union of the events' data (`RunEventPayload`), and its
 * `x-sse-events` names the schema of each event's data; that map is written out here.
 */
export type TurnEventData = {
  run: Schemas['RunEventData']
  config_warnings: Schemas['ConfigWarningsEventData']
  translation_warnings: Schemas['TranslationWarningsEventData']
  compacting: Schemas['CompactingEventData']
  block_start: Schemas['BlockStartEventData']
  delta: Schemas['DeltaEventData']
  block_stop: Schemas['BlockStopEventData']
  done: Schemas['DoneEventData']
  error: Schemas['ErrorEventData']
}

/**
 * A frame as read: the event's name, its parsed data and its `id` (`<run_id>:<sequence number>`,
 * docs/decisions/038-resumable-run-streams.md): the place to resume after. Absent on a frame sent
 * without one (the `unavailable` error a server writes as it shuts down ends the connection, not the run).
 */
export type TurnEvent = { [E in keyof TurnEventData]: { event: E; data: TurnEventData[E]; id?: string } }[keyof TurnEventData]

export type TurnEventName = TurnEvent['event']

/** What the generated 200 says arrives: the same data, union for union, both ways, or this fails to compile. */
type StreamData = paths['/api/v1/chats/{chat_id}/responses']['post']['responses'][200]['content']['text/event-stream']
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const sameData: Same<StreamData, TurnEventData[TurnEventName]> = true
void sameData

export type ErrorBody = Schemas['ErrorBody']
export type ConfigWarning = Schemas['ConfigWarning']
export type TranslationWarning = Schemas['TranslationWarning']
export type Usage = Schemas['Usage']
export type BlockStart = TurnEventData['block_start']
export type Delta = TurnEventData['delta']
export type PendingToolCall = TurnEventData['done']['pending_tool_calls'][number]
export type StopReason = TurnEventData['done']['stop_reason']

/** Every name, checked both ways against TurnEventData (a name missing here or unknown there fails to compile) and, by test/clients/turn-event-names.test.ts, against the document's `x-sse-events`. */
const EVENT_NAMES = {
  run: true,
  config_warnings: true,
  translation_warnings: true,
  compacting: true,
  block_start: true,
  delta: true,
  block_stop: true,
  done: true,
  error: true,
} as const satisfies Record<TurnEventName, true>

export function isTurnEventName(name: string): name is TurnEventName {
  return Object.hasOwn(EVENT_NAMES, name)
}
