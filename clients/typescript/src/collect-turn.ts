import { ParleyApiError } from './parley-error.ts'
import type { ConfigWarning, TranslationWarning, TurnEvent, TurnEventData } from './turn-events.ts'

export type TurnBlock =
  | { kind: 'text' | 'reasoning' | 'refusal'; text: string }
  /** `input` is the call's arguments: the `tool_input` deltas joined and parsed. */
  | { kind: 'tool_call'; tool_name: string; tool_use_id: string; input: unknown }

export type CollectedTurn = {
  runId: string
  chatId: string
  /** Tool calls this submission closed, by its results or by tombstones. */
  closedToolCalls: string[]
  configWarnings: ConfigWarning[]
  translationWarnings: TranslationWarning[]
  blocks: TurnBlock[]
  done: TurnEventData['done']
}

/**
 * Reads a turn (or a run's stream read with `turns.resume`) to its end and gathers its blocks. An `error` event (a failure after the stream
 * opened, a cancel) throws a ParleyApiError with no status, naming the run in `runId`.
 */
export async function collectTurn(turn: AsyncIterable<TurnEvent>): Promise<CollectedTurn> {
  let opened: TurnEventData['run'] | null = null
  let configWarnings: ConfigWarning[] = []
  let translationWarnings: TranslationWarning[] = []
  const blocks: TurnBlock[] = []
  let open: { start: TurnEventData['block_start']; text: string } | null = null
  for await (const event of turn) {
    switch (event.event) {
      case 'run':
        opened = event.data
        break
      case 'config_warnings':
        // Sent again after compaction when they changed: the last one is in force.
        configWarnings = event.data.warnings
        break
      case 'translation_warnings':
        translationWarnings = event.data.warnings
        break
      case 'compacting':
        break
      case 'block_start':
        open = { start: event.data, text: '' }
        break
      case 'delta':
        if (open) open.text += event.data.text
        break
      case 'block_stop':
        if (open) blocks.push(blockOf(open.start, open.text))
        open = null
        break
      case 'done':
        if (!opened) throw new Error('the stream ended with done before its run event')
        return {
          runId: opened.run_id,
          chatId: opened.chat_id,
          closedToolCalls: opened.closed_tool_calls,
          configWarnings,
          translationWarnings,
          blocks,
          done: event.data,
        }
      case 'error':
        throw new ParleyApiError(null, event.data)
      default:
        return event satisfies never
    }
  }
  throw new Error(`the stream of run ${opened?.run_id ?? '(not opened)'} ended without done or error`)
}

function blockOf(start: TurnEventData['block_start'], text: string): TurnBlock {
  if (start.kind !== 'tool_call') return { kind: start.kind, text }
  // A call with no arguments streams no tool_input at all.
  return { kind: 'tool_call', tool_name: start.tool_name, tool_use_id: start.tool_use_id, input: text === '' ? {} : JSON.parse(text) }
}
