import type { RetentionRules } from '../config/config-types.ts'
import type { PartBody } from '../parts.ts'
import type { MediaRef, RenderedPart, SentAttachment } from './context-types.ts'
import { estimateRenderedTokens } from './estimate-part-tokens.ts'
import type { ImageRule } from './image-tokens.ts'
import type { Rendering } from './packing-history.ts'
import { attachmentMarker, fenceUntrusted, renderVerbatim } from './render-part.ts'
import { renderedBytes } from './request-bytes.ts'
import { marksTruncations, payloadTruncation } from './retention-choices.ts'
import { truncateText } from './truncate-text.ts'

/**
 * What becomes of one attachment: sent, or a marker for a reason: the retention rules, the model
 * cannot take it, the model's count per request, or the vendor's request size (decision 045).
 */
export type AttachmentChoice = 'send' | 'retention' | 'model' | 'limit' | 'bytes'

/** How one part is packed: its payload cut by the retention rules or whole, and each attachment's fate. */
export type PartChoices = { cut: boolean; attachments: readonly AttachmentChoice[]; modelRefusals: readonly (string | null)[]; limit: number | null }

const WHY_RETENTION = 'older than the retention policy replays attachments'
const whyLimit = (limit: number | null) => `over the model's limit of ${limit} attachments per request in this carrier`
// No figure here: renderings are kept by choice code across models of one media policy, whose vendors' limits may differ.
const WHY_BYTES = "left out of this request to keep it within the vendor's request size limit"

const CHOICES: readonly AttachmentChoice[] = ['send', 'retention', 'model', 'limit', 'bytes']
/** Each attachment's choice is one digit of the code in this base (5^20, for MAX_ATTACHMENTS_PER_PART, is well within 2^53). */
export const CHOICE_BASE = CHOICES.length
/** Each choice's digit in the code: packing's walk writes codes out by hand. */
export const CHOICE_DIGIT = { send: 0, retention: 1, model: 2, limit: 3, bytes: 4 } as const satisfies Record<AttachmentChoice, number>

/**
 * Choices as one number, the key renderings are kept under (equal codes, equal renderings for one
 * rules document and media policy): 1 for a cut payload, plus 2 × CHOICE_BASE^k × each attachment's choice.
 */
export function choiceCode(cut: boolean, attachments: readonly AttachmentChoice[]): number {
  let code = cut ? 1 : 0
  let weight = 2
  for (const a of attachments) {
    code += weight * CHOICES.indexOf(a)
    weight *= CHOICE_BASE
  }
  return code
}

/** The code of a part sent whole: only what the model cannot take is replaced (choice 2 = 'model'), as choiceCode would give it. */
export function wholeCode(refusals: readonly (string | null)[]): number {
  let code = 0
  let weight = 2
  for (const refusal of refusals) {
    if (refusal !== null) code += weight * 2
    weight *= CHOICE_BASE
  }
  return code
}

/** The choices a code stands for, for a part with `count` attachments. */
export function choicesOfCode(code: number, count: number, modelRefusals: readonly (string | null)[], limit: number | null): PartChoices {
  const attachments: AttachmentChoice[] = []
  let rest = Math.floor(code / 2)
  for (let k = 0; k < count; k++) {
    attachments.push(CHOICES[rest % CHOICE_BASE]!)
    rest = Math.floor(rest / CHOICE_BASE)
  }
  return { cut: code % 2 === 1, attachments, modelRefusals, limit }
}

/**
 * A part under the retention rules' choices (docs/guide/context.md): its payload cut when `cut`, its
 * attachments sent or replaced by markers. `truncated` says something was cut or replaced.
 */
export function renderTreated(body: PartBody, media: readonly MediaRef[], choices: PartChoices, rules: RetentionRules, images: ImageRule): Rendering {
  const whole = renderVerbatim(body, media)
  let truncated = false
  const whyMarker = (choice: Exclude<AttachmentChoice, 'send'>, i: number): string => {
    switch (choice) {
      case 'retention':
        return WHY_RETENTION
      case 'model':
        return choices.modelRefusals[i] ?? 'the model does not take it'
      case 'limit':
        return whyLimit(choices.limit)
      case 'bytes':
        return WHY_BYTES
      default: {
        const unknown: never = choice
        throw new Error(`unknown attachment choice ${String(unknown)}`)
      }
    }
  }
  const attachments = (): SentAttachment[] =>
    media.map((m, i): SentAttachment => {
      const choice = choices.attachments[i] ?? 'send'
      if (choice === 'send') return { kind: 'file', media: m }
      truncated = true
      return { kind: 'marker', media: m, text: attachmentMarker(m, whyMarker(choice, i)) }
    })
  const cut = (text: string) => {
    if (!choices.cut) return text
    const result = truncateText(text, payloadTruncation(body, rules), marksTruncations(rules))
    if (result.cut) truncated = true
    return result.text
  }

  let content: RenderedPart
  switch (body.type) {
    case 'prompt':
      content = { type: 'prompt', text: cut(body.text), attachments: attachments() }
      break
    case 'tool_result': {
      if (whole.type !== 'tool_result') throw new Error('rendering changed the part type')
      // A tombstone's notice is ours, not a payload; untrusted text is cut inside its fence.
      const text = body.tombstone_reason ? whole.text : body.trust === 'untrusted' ? fenceUntrusted(cut(body.text)) : cut(body.text)
      content = { ...whole, text, attachments: attachments() }
      break
    }
    case 'message': {
      if (whole.type !== 'message') throw new Error('rendering changed the part type')
      const text = cut(body.refusal ?? body.text)
      // The vendor signed what it said (decision 026): a cut message goes without its replay data.
      content = text === whole.text ? whole : { type: 'message', text }
      break
    }
    case 'reasoning':
      content = whole
      break
    case 'tool_call': {
      if (whole.type !== 'tool_call') throw new Error('rendering changed the part type')
      const args = cut(whole.arguments)
      // Cut arguments are no longer JSON: they travel as a string inside an object every vendor takes,
      // without the replay data the vendor made for the whole call (decision 026).
      content =
        args === whole.arguments
          ? whole
          : { type: 'tool_call', toolUseId: whole.toolUseId, toolName: whole.toolName, arguments: JSON.stringify({ truncated_arguments: args }) }
      break
    }
    default: {
      const unknown: never = body
      throw new Error(`unknown part ${JSON.stringify(unknown)}`)
    }
  }
  const files = choices.attachments.filter((a) => a === 'send').length + Math.max(0, media.length - choices.attachments.length)
  const refused = choices.attachments.filter((a) => a === 'model').length
  return { content, tokens: estimateRenderedTokens(content, images), truncated, files, refused, bytes: renderedBytes(content) }
}
