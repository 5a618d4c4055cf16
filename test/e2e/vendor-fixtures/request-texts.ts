import type { Vendor } from './wire.ts'

/**
 * What the replay server reads from a vendor request to check it against the model's limits: every
 * text the model would read (system or instructions, message texts, reasoning sent back, tool call
 * arguments, tool results, tool definitions), the output ceiling asked for, and the model. One
 * reader per vendor wire format, as the @ai-sdk packages build them.
 */

export type RequestFacts = {
  /** The vendor's model id, from the body or (Gemini) the path; null when absent. */
  model: string | null
  /** Every text of the request the vendor's tokenizer would count, in request order. */
  texts: string[]
  /** The output ceiling asked for (max_tokens and its vendor names), or null when the request sets none. */
  outputCeiling: number | null
}

const json = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value ?? null))
const number = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : null)

/** A content value that is a string, or an array of blocks with text (chat completions, Anthropic tool results). */
function contentTexts(content: unknown, out: string[]): void {
  if (typeof content === 'string') out.push(content)
  else if (Array.isArray(content)) {
    for (const block of content) {
      if (typeof block === 'string') out.push(block)
      else if (block && typeof block === 'object' && typeof (block as { text?: unknown }).text === 'string') out.push((block as { text: string }).text)
    }
  }
}

function anthropic(body: any): RequestFacts {
  const texts: string[] = []
  contentTexts(body.system, texts)
  for (const tool of body.tools ?? []) texts.push(tool.name ?? '', tool.description ?? '', json(tool.input_schema))
  for (const message of body.messages ?? []) {
    if (typeof message.content === 'string') {
      texts.push(message.content)
      continue
    }
    for (const block of message.content ?? []) {
      switch (block.type) {
        case 'text':
          texts.push(block.text)
          break
        case 'thinking':
          texts.push(block.thinking ?? '')
          break
        case 'tool_use':
          texts.push(block.name ?? '', json(block.input))
          break
        case 'tool_result':
          contentTexts(block.content, texts)
          break
        default:
          break
      }
    }
  }
  return { model: body.model ?? null, texts, outputCeiling: number(body.max_tokens) }
}

/** OpenAI and xAI (@ai-sdk/xai 5 speaks only the Responses API): the Responses shape. */
function responses(body: any): RequestFacts {
  const texts: string[] = []
  if (typeof body.instructions === 'string') texts.push(body.instructions)
  for (const tool of body.tools ?? []) texts.push(tool.name ?? '', tool.description ?? '', json(tool.parameters))
  for (const item of body.input ?? []) {
    if (item.type === 'function_call') texts.push(item.name ?? '', item.arguments ?? '')
    else if (item.type === 'function_call_output') contentTexts(item.output, texts)
    else if (item.type === 'reasoning') for (const s of item.summary ?? []) texts.push(s.text ?? '')
    else if ('role' in item) contentTexts(item.content, texts)
  }
  return { model: body.model ?? null, texts, outputCeiling: number(body.max_output_tokens) }
}

function gemini(body: any, path: string): RequestFacts {
  const texts: string[] = []
  for (const part of body.systemInstruction?.parts ?? []) if (typeof part.text === 'string') texts.push(part.text)
  for (const tool of body.tools ?? []) {
    for (const f of tool.functionDeclarations ?? []) texts.push(f.name ?? '', f.description ?? '', json(f.parameters))
  }
  for (const content of body.contents ?? []) {
    for (const part of content.parts ?? []) {
      if (typeof part.text === 'string') texts.push(part.text)
      else if (part.functionCall) texts.push(part.functionCall.name ?? '', json(part.functionCall.args))
      else if (part.functionResponse) texts.push(part.functionResponse.name ?? '', json(part.functionResponse.response?.content ?? part.functionResponse.response))
    }
  }
  const model = /\/models\/([\w.-]+):/.exec(path)?.[1] ?? null
  return { model, texts, outputCeiling: number(body.generationConfig?.maxOutputTokens) }
}

/** Mistral and DeepSeek: the chat-completions shape. */
function chatCompletions(body: any): RequestFacts {
  const texts: string[] = []
  for (const tool of body.tools ?? []) texts.push(tool.function?.name ?? '', tool.function?.description ?? '', json(tool.function?.parameters))
  for (const message of body.messages ?? []) {
    contentTexts(message.content, texts)
    if (typeof message.reasoning_content === 'string') texts.push(message.reasoning_content)
    for (const call of message.tool_calls ?? []) texts.push(call.function?.name ?? '', call.function?.arguments ?? '')
  }
  return { model: body.model ?? null, texts, outputCeiling: number(body.max_tokens) ?? number(body.max_completion_tokens) }
}

export function requestFacts(vendor: Vendor, body: any, path: string): RequestFacts {
  const b = body && typeof body === 'object' ? body : {}
  switch (vendor) {
    case 'anthropic':
      return anthropic(b)
    case 'openai':
    case 'xai':
      return responses(b)
    case 'google':
      return gemini(b, path)
    case 'mistral':
    case 'deepseek':
      return chatCompletions(b)
  }
}
