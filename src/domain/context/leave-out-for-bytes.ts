import type { TranslationWarning } from '../turns/coerce-reasoning-effort.ts'
import type { PackItem } from './attachment-limits.ts'
import type { LeftOutAttachment } from './context-manifest.ts'
import type { Rendering } from './packing-history.ts'
import { CHOICE_BASE, CHOICE_DIGIT, choiceCode, choicesOfCode, type AttachmentChoice } from './render-treated.ts'

/*
 * Past the vendor's request limit, attachments are left out oldest first, each a marker (decision 045).
 * Packing's walk does this for the history as it goes (newest first, so what it leaves out is the
 * oldest); these are for the rare rest: fixed parts that alone pass the limit, and summaries that
 * weigh more than the history they replace.
 */

/**
 * Leaves out sent attachments of `items`, in the order given (oldest first), one at a time until
 * `over` bytes are saved or none is left; `render` gives an item's rendering for a code. Items are
 * changed in place (code, rendering). Answers the bytes still over (0 or less: within the limit).
 */
export function leaveOutOldest(items: readonly PackItem[], over: number, render: (item: PackItem, code: number) => Rendering): number {
  for (const item of items) {
    for (let i = 0; i < item.media.length && over > 0; i++) {
      const choices = choicesOfCode(item.code, item.media.length, item.refusals, null)
      if (choices.attachments[i] !== 'send') continue
      const before = item.rendering.bytes
      item.code = choiceCode(choices.cut, choices.attachments.map((c, j): AttachmentChoice => (j === i ? 'bytes' : c)))
      item.rendering = render(item, item.code)
      over -= before - item.rendering.bytes
    }
    if (over <= 0) break
  }
  return over
}

/** Whether a choice code leaves any of its `count` attachments out for bytes. */
export function leavesOutForBytes(code: number, count: number): boolean {
  let rest = Math.floor(code / 2)
  for (let k = 0; k < count; k++) {
    if (rest % CHOICE_BASE === CHOICE_DIGIT.bytes) return true
    rest = Math.floor(rest / CHOICE_BASE)
  }
  return false
}

/** The manifest's entries and the warnings for one part's attachments left out for bytes. */
export function leftOutOf(
  ordinal: number,
  media: PackItem['media'],
  code: number,
  maxRequestBytes: number,
): { entries: LeftOutAttachment[]; warnings: TranslationWarning[] } {
  const entries: LeftOutAttachment[] = []
  const warnings: TranslationWarning[] = []
  const choices = choicesOfCode(code, media.length, [], null)
  media.forEach((m, i) => {
    if (choices.attachments[i] !== 'bytes') return
    entries.push({ ordinal, media_id: m.mediaId, mime: m.mime, byte_len: m.byteLen, reason: 'request_bytes', max_request_bytes: maxRequestBytes })
    warnings.push({
      code: 'attachment_replaced_by_marker',
      message: `the model's vendor takes requests of at most ${maxRequestBytes} bytes, attachments inline in base64; older ones are sent as markers`,
      details: { ordinal, mime: m.mime, max_request_bytes: maxRequestBytes },
    })
  })
  return { entries, warnings }
}
