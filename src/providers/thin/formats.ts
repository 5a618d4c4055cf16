import type { ThinFormat } from './thin-model.ts'
import { coversAnthropicMessages, createAnthropicMessagesConverter } from './anthropic-messages.ts'
import { coversOpenAIResponses, createOpenAIResponsesConverter, openaiResponsesCall } from './openai-responses.ts'

/** The vendors with a thin streaming path (decision 050), by catalogue provider; the others stream through their package alone. */
export const THIN_FORMATS: Partial<Record<string, ThinFormat>> = {
  openai: {
    covers: coversOpenAIResponses,
    converter: (options) => createOpenAIResponsesConverter(openaiResponsesCall(options)),
    peeksForErrors: true,
  },
  anthropic: {
    covers: coversAnthropicMessages,
    converter: (options) => createAnthropicMessagesConverter(options),
    // The package reads its first part before doStream resolves: an error event there fails the call.
    peeksForErrors: true,
  },
}
