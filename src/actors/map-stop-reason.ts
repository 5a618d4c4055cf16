import type { LanguageModelV4FinishReason } from '@ai-sdk/provider'
import type { RunOutcome } from '../domain/runs/run-outcome.ts'

/** The AI SDK's unified finish reason as the spec's StopReason. */
export function mapStopReason(finish: LanguageModelV4FinishReason): NonNullable<RunOutcome['stopReason']> {
  switch (finish.unified) {
    case 'stop':
      return finish.raw === 'stop_sequence' ? 'stop_sequence' : 'end_turn'
    case 'length':
      return 'max_tokens'
    case 'tool-calls':
      return 'tool_use'
    case 'content-filter':
      return 'refusal'
    case 'error':
    case 'other':
      return 'end_turn'
    case 'interrupted':
      // readFinish does not take an interrupted stream for a finish: the run fails as cut off
      // before a stop reason is read. Named here so the switch stays whole.
      return 'end_turn'
    default: {
      const unknown: never = finish.unified
      throw new Error(`unknown finish reason ${String(unknown)}`)
    }
  }
}
