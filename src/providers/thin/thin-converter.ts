import type { LanguageModelV4StreamPart } from '@ai-sdk/provider'

/**
 * One vendor's event stream converted straight to the AI SDK's stream parts (issue 34, decision
 * 050): what a thin path's converter says of each event.
 */
export type ThinStep = {
  /** The parts the event makes, in order. */
  parts: LanguageModelV4StreamPart[]
  /**
   * False when the event is not this converter's to map: malformed JSON, a field failing its check,
   * an error event, or an event the vendor's package maps and this path does not. The call then
   * hands the whole stream to the package (./thin-model.ts); `parts` is empty.
   */
  taken: boolean
  /** Whether the package counts the event as output (its stream opens on one; errors before it fail the call instead). */
  output: boolean
  /** Whether the event says the vendor accepted the request (OpenAI's response.in_progress: the package waits 50 ms more at most). */
  accepted: boolean
}

export type ThinConverter = {
  /** One event's data, as its SSE `data:` lines carry it. */
  push(data: string): ThinStep
  /** The parts that close the stream once the body has ended (the finish). */
  end(): LanguageModelV4StreamPart[]
}

/** Every recorded event through a converter: the pure conversion the parity tests compare with the package's. */
export function convertEvents(
  converter: ThinConverter,
  events: readonly string[],
): { value: LanguageModelV4StreamPart[] | null; warnings: string[] } {
  const parts: LanguageModelV4StreamPart[] = []
  for (const data of events) {
    const step = converter.push(data)
    if (!step.taken) return { value: null, warnings: [`not taken: ${data.slice(0, 120)}`] }
    parts.push(...step.parts)
  }
  parts.push(...converter.end())
  return { value: parts, warnings: [] }
}
