import type { RenderedPart, SentAttachment } from './context-types.ts'

/*
 * What a packed request weighs on the wire (decision 045): vendors refuse a request body over their
 * documented size (Anthropic's Messages API: 32 MB, with a 413), and attachments travel inline as
 * base64. These are upper bounds of a part's share of the vendor's JSON body, so a context whose sum
 * is within the limit is a request within it.
 */

/** The JSON wrapping one part or one attachment gets in a vendor's body (role, type, media type and data-URL prefix, tool ids): generous, so the sum is a bound. */
export const PART_ENVELOPE_BYTES = 512
/** The request's own envelope: model id, max_tokens, the thinking and cache settings, the system block's wrapping. */
export const REQUEST_ENVELOPE_BYTES = 16 * 1024

/** A text as a JSON string in UTF-8: escaping can make a control character six bytes. */
export const jsonTextBytes = (text: string): number => Buffer.byteLength(JSON.stringify(text), 'utf8')

/** An attachment's bytes sent inline: base64 (4 characters for every 3 bytes, padded) with its wrapping. */
export const inlineFileBytes = (byteLen: number): number => 4 * Math.ceil(byteLen / 3) + PART_ENVELOPE_BYTES

const attachmentBytes = (a: SentAttachment) => (a.kind === 'file' ? inlineFileBytes(a.media.byteLen) : jsonTextBytes(a.text) + PART_ENVELOPE_BYTES)
const replayBytes = (replay: { metadata: unknown } | undefined) => (replay === undefined ? 0 : Buffer.byteLength(JSON.stringify(replay.metadata), 'utf8'))

/** The bytes one packed part adds to a vendor request: its texts as JSON, its attachments inline, its replay data, and their wrapping. */
export function renderedBytes(part: RenderedPart): number {
  let bytes = PART_ENVELOPE_BYTES
  switch (part.type) {
    case 'prompt':
      bytes += jsonTextBytes(part.text)
      for (const a of part.attachments) bytes += attachmentBytes(a)
      return bytes
    case 'tool_result':
      bytes += jsonTextBytes(part.toolName) + jsonTextBytes(part.toolUseId) + jsonTextBytes(part.text)
      for (const a of part.attachments) bytes += attachmentBytes(a)
      return bytes
    case 'message':
    case 'reasoning':
      return bytes + jsonTextBytes(part.text) + replayBytes(part.replay)
    case 'tool_call':
      return bytes + jsonTextBytes(part.toolName) + jsonTextBytes(part.toolUseId) + jsonTextBytes(part.arguments) + replayBytes(part.replay)
    case 'summary':
      return bytes + jsonTextBytes(part.text)
    default: {
      const unknown: never = part
      throw new Error(`unknown part ${JSON.stringify(unknown)}`)
    }
  }
}
