/**
 * What a vendor fixture is made of: recorded-shape HTTP answers that the replay server sends back
 * verbatim, and the few facts about them a test asserts on.
 */

export type Vendor = 'anthropic' | 'openai' | 'google' | 'mistral' | 'xai' | 'deepseek'

/** One HTTP answer, replayed as is. */
export type ReplayResponse =
  /**
   * A 200 event stream; each string is one whole SSE event (or comment), line endings included.
   * After its events it ends (`close`, the default), goes silent with the connection open (`hang`),
   * or drops the connection (`destroy`).
   */
  | { kind: 'stream'; headers: Record<string, string>; events: string[]; end?: 'close' | 'hang' | 'destroy' }
  /** A JSON answer, e.g. a vendor error before any stream. */
  | { kind: 'json'; status: number; headers: Record<string, string>; body: unknown }
  /** No answer at all: the request is read and the connection left open. */
  | { kind: 'hang' }

/** A streamed text answer and what it says. */
export type TextReply = {
  response: ReplayResponse
  /** Every text delta, concatenated. */
  text: string
  /** Every reasoning delta, concatenated ('' when the vendor streams none). */
  reasoning: string
}

/** A streamed tool call and what it says. */
export type ToolCallReply = {
  response: ReplayResponse
  /** Text the model wrote before the call ('' when none). */
  text: string
  /** Reasoning the model streamed before the call ('' when none). */
  reasoning: string
  toolName: string
  /** The vendor's call id, or null when the vendor sends none (the SDK makes one up). */
  toolCallId: string | null
  /** The arguments the vendor streamed, concatenated. */
  arguments: string
}

export type VendorFixture = {
  vendor: Vendor
  /** Where this vendor lives on the replay server, with the API version its SDK expects in its base URL. */
  basePath: string
  /** Whether a path (with its query) is this vendor's streaming endpoint. */
  isStreamPath: (path: string) => boolean
  /** A plain answer to a plain prompt. */
  text: TextReply
  /** A tool call to `get_weather` for Oslo. */
  toolCall: ToolCallReply
  /** The answer once the tool result is sent. */
  afterToolResult: TextReply
  /** An HTTP error before any stream, in the vendor's error JSON. */
  serverError: ReplayResponse & { kind: 'json' }
}

/** `event: NAME` + `data: JSON` (Anthropic, OpenAI Responses). */
export const namedEvent = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`

/** `data: JSON` alone (chat-completions style vendors). */
export const dataEvent = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`

/** The chat-completions end of stream. */
export const DONE = 'data: [DONE]\n\n'

/** Text split into the pieces a model streams. */
export const pieces = (...parts: string[]) => ({ parts, text: parts.join('') })
