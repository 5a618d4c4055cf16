import { APICallError, type LanguageModelV4CallOptions, type LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { randomUUID } from 'node:crypto'
import { estimateTokens } from '../../domain/tokens/estimate-tokens.ts'
import { estimatePromptTokens } from '../estimate-prompt-tokens.ts'

/** Provider options of a compaction run (src/actors/summarise-block.ts): the block's ordinals. */
export type SandboxCompaction = { firstOrdinal: number; lastOrdinal: number }

/** Words of each part the sandbox keeps in its summary. */
const WORDS_PER_PART = 6
/** A transcript item (src/providers/compaction-prompt.ts): `[#ordinal kind]` (`[#A-B summary]` in a merge), a newline, the text. */
const ITEM = /^\[#(\d+(?:-\d+)?) (\w+)\]\n([\s\S]*)$/
/** How the sandbox's own summaries begin: left out when it merges them, so a merge keeps their gist. */
const OWN_HEAD = /^Summary of ordinals \d+-\d+:\s*/

/**
 * docs/guide/sandbox.md: the sandbox summarises a block deterministically, `Summary of ordinals A-B:` then
 * the first words of each part (of each summary's gist, when it merges summaries); a block holding a prompt with the line `/fail-summary` cannot be
 * summarised (the compaction run fails before its first byte).
 */
export function sandboxSummaryCall(modelId: string, options: LanguageModelV4CallOptions, range: SandboxCompaction) {
  const items = options.prompt.flatMap((m) => (m.role === 'user' ? m.content : [])).flatMap((c) => (c.type === 'text' ? [ITEM.exec(c.text)] : []))
  const parts = items.flatMap((match) => (match ? [{ kind: match[2]!, text: match[2] === 'summary' ? match[3]!.replace(OWN_HEAD, '') : match[3]! }] : []))
  if (parts.some((p) => p.kind === 'prompt' && p.text.split('\n').some((line) => line.trim() === '/fail-summary'))) {
    throw new APICallError({ message: 'sandbox: this block cannot be summarised (/fail-summary)', url: `sandbox://${modelId}`, requestBodyValues: {}, statusCode: 502, isRetryable: false })
  }
  const gist = parts.map((p) => p.text.split(/\s+/).filter(Boolean).slice(0, WORDS_PER_PART).join(' ')).filter(Boolean)
  const words = `Summary of ordinals ${range.firstOrdinal}-${range.lastOrdinal}: ${gist.join(' / ')}`.split(/(?<=\s)/)
  const max = options.maxOutputTokens ?? Number.MAX_SAFE_INTEGER
  const inputTokens = estimatePromptTokens(options.prompt)
  const stream = new ReadableStream<LanguageModelV4StreamPart>({
    start(controller) {
      const id = randomUUID()
      controller.enqueue({ type: 'stream-start', warnings: [] })
      controller.enqueue({ type: 'response-metadata', id: `sandbox-${randomUUID()}`, modelId, timestamp: new Date(0) })
      controller.enqueue({ type: 'text-start', id })
      let text = ''
      let cut = false
      for (const word of words) {
        if (estimateTokens(text + word) > max) {
          cut = true
          break
        }
        text += word
        controller.enqueue({ type: 'text-delta', id, delta: word })
      }
      controller.enqueue({ type: 'text-end', id })
      const outputTokens = estimateTokens(text)
      controller.enqueue({
        type: 'finish',
        finishReason: cut ? { unified: 'length', raw: 'max_tokens' } : { unified: 'stop', raw: 'end_turn' },
        usage: {
          inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: outputTokens, text: outputTokens, reasoning: 0 },
        },
      })
      controller.close()
    },
  })
  return { stream, response: { headers: {} } }
}
