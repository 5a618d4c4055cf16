import type { LanguageModelV4CallOptions } from '@ai-sdk/provider'
import type { TranslationWarning } from '../domain/turns/coerce-reasoning-effort.ts'
import type { ResponseFormat, ToolChoice, TurnRequest } from '../domain/turns/submission.ts'

/** The per-turn settings of a vendor call (docs/guide/turn-options.md), as the AI SDK's call options take them. */
export type CallSettings = Pick<LanguageModelV4CallOptions, 'temperature' | 'topP' | 'toolChoice' | 'responseFormat'>

/**
 * The highest temperature each vendor takes, where it is below the API's 2. Anthropic's Messages API
 * documents `temperature` as "Ranges from 0.0 to 1.0" (docs.anthropic.com, Messages API reference,
 * read 2026-11-29); the others take 0 to 2 (OpenAI, Google, Mistral, xAI, DeepSeek).
 */
const TEMPERATURE_CEILING: Partial<Record<string, number>> = { anthropic: 1 }

function toolChoiceOf(choice: ToolChoice): NonNullable<CallSettings['toolChoice']> {
  if (typeof choice === 'object') return { type: 'tool', toolName: choice.name }
  return { type: choice }
}

function responseFormatOf(format: ResponseFormat): NonNullable<CallSettings['responseFormat']> {
  switch (format.type) {
    case 'text':
      return { type: 'text' }
    case 'json_object':
      return { type: 'json' }
    case 'json_schema':
      return {
        type: 'json',
        schema: format.schema as NonNullable<Extract<CallSettings['responseFormat'], { type: 'json' }>['schema']>,
        ...(format.name === undefined ? {} : { name: format.name }),
        ...(format.description === undefined ? {} : { description: format.description }),
      }
    default: {
      const unknown: never = format
      throw new Error(`unknown response_format ${JSON.stringify(unknown)}`)
    }
  }
}

/**
 * A turn's temperature, tool_choice and response_format as the vendor's package is asked for them.
 * Each vendor's package translates them to its wire (the AI SDK providers: OpenAI's `text.format`,
 * Google's `responseSchema`, …). A temperature above the vendor's ceiling is lowered to it with a
 * translation warning, as a reasoning effort the model lacks is (decision 054).
 */
export function mapCallSettings(provider: string, request: Pick<TurnRequest, 'temperature' | 'top_p' | 'tool_choice' | 'response_format'>): { value: CallSettings; warnings: TranslationWarning[] } {
  const value: CallSettings = {}
  const warnings: TranslationWarning[] = []
  const temperature = request.temperature ?? null
  if (temperature !== null) {
    const ceiling = TEMPERATURE_CEILING[provider]
    if (ceiling !== undefined && temperature > ceiling) {
      warnings.push({
        code: 'temperature_lowered',
        message: `${provider} takes a temperature up to ${ceiling}; ${temperature} was sent as ${ceiling}`,
        details: { requested: temperature, sent: ceiling },
      })
      value.temperature = ceiling
    } else value.temperature = temperature
  }
  if (request.top_p != null) value.topP = request.top_p
  if (request.tool_choice != null) value.toolChoice = toolChoiceOf(request.tool_choice)
  if (request.response_format != null) value.responseFormat = responseFormatOf(request.response_format)
  return { value, warnings }
}
