import type { components, paths } from './schema.ts'

/**
 * The events of a turn's stream (docs/guide/turn-stream.md) as /openapi.json describes them: the turn's 200
 * `text/event-stream` is a oneOf of `{event, data}` by event name, generated into src/schema.ts.
 */
export type TurnEvent = paths['/api/v1/chats/{chat_id}/responses']['post']['responses'][200]['content']['text/event-stream']

export type TurnEventName = TurnEvent['event']

/** The data of each event, by its name. */
export type TurnEventData = { [E in TurnEventName]: Extract<TurnEvent, { event: E }>['data'] }

type Schemas = components['schemas']
export type ErrorBody = Schemas['ErrorBody']
export type ConfigWarning = Schemas['ConfigWarning']
export type TranslationWarning = Schemas['TranslationWarning']
export type Usage = Schemas['Usage']
export type BlockStart = TurnEventData['block_start']
export type Delta = TurnEventData['delta']
export type PendingToolCall = TurnEventData['done']['pending_tool_calls'][number]
export type StopReason = TurnEventData['done']['stop_reason']

/** Every name, checked both ways against the generated union: a name missing here or unknown there fails to compile. */
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
