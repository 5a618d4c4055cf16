import type { LanguageModelV4StreamPart } from '@ai-sdk/provider'

type FinishPart = Extract<LanguageModelV4StreamPart, { type: 'finish' }>

/**
 * What a stream's `finish` part really tells. The vendor packages send one when the HTTP stream
 * closes even if the vendor never said how its answer ended (OpenAI, Mistral, xAI, DeepSeek,
 * Google): that finish has no vendor reason and maps to `other`. Since the V4 interface (AI SDK 7)
 * some packages (Anthropic's) name that case `interrupted`: "the provider stream ended without a
 * completion signal; output may be incomplete". Such an answer may be cut off, so it is not a
 * finish (issue 11); its usage counts only if the vendor reported some.
 */
export function readFinish(part: FinishPart): { saysHowItEnded: boolean; usageReported: boolean } {
  const unified = part.finishReason.unified
  const saysHowItEnded = unified !== 'interrupted' && !(unified === 'other' && part.finishReason.raw === undefined)
  const usageReported = (part.usage.inputTokens.total ?? 0) > 0 || (part.usage.outputTokens.total ?? 0) > 0
  return { saysHowItEnded, usageReported }
}
