import type { CatalogueEntry, MediaPolicy } from '../catalogue/catalogue-entry.ts'
import type { RetentionRules } from '../config/config-types.ts'
import type { PartBody, PartKind } from '../parts.ts'
import type { TranslationWarning } from '../turns/coerce-reasoning-effort.ts'
import type { MediaRef } from './context-types.ts'
import type { ImageRule } from './image-tokens.ts'
import type { HistoryEntry, Rendering } from './packing-history.ts'
import { choiceCode, choicesOfCode, renderTreated, type AttachmentChoice } from './render-treated.ts'

/*
 * What the model can take (docs/guide/context.md media capabilities): attachments it cannot take in a carrier,
 * and `max_attachments_per_request` counted across the whole packed context, become markers with
 * translation warnings (docs/guide/chats-and-ledger.md; decision 012).
 */

/** A part on its way into the context: a history entry or a new part, with its choices and rendering. */
export type PackItem = {
  /** The history entry's index, or -1 for a new part. */
  index: number
  entry: HistoryEntry | null
  body: PartBody | null
  media: readonly MediaRef[]
  ordinal: number
  /** The choices as a code (render-treated.ts `choiceCode`). */
  code: number
  refusals: readonly (string | null)[]
  rendering: Rendering
}

/** The media policy of the carrier a part of this kind is (assistant parts carry no attachments here). */
export const policyOfKind = (kind: PartKind, media: CatalogueEntry['media']): MediaPolicy | null =>
  kind === 'prompt' ? media.user : kind === 'tool_result' ? media.tool_result : null

/** Why the model cannot take an attachment in this carrier, or null when it can. */
export function modelRefusal(policy: MediaPolicy | null, m: MediaRef): string | null {
  if (policy === null || !policy.mime_types.includes(m.mime)) return `the model does not take ${m.mime} here`
  if (m.byteLen > policy.max_bytes_per_attachment) return 'it is larger than the model takes'
  return null
}

export function modelWarnings(item: PackItem): TranslationWarning[] {
  const choices = choicesOfCode(item.code, item.media.length, item.refusals, null)
  return item.media.flatMap((m, i) =>
    choices.attachments[i] === 'model'
      ? [{ code: 'attachment_replaced_by_marker', message: item.refusals[i] ?? 'the model does not take it', details: { ordinal: item.ordinal, mime: m.mime } }]
      : [],
  )
}

/** Whether any carrier sends more attachments than the model takes in one request. */
export function overAttachmentLimit(groups: readonly (readonly PackItem[])[], history: readonly Rendering[], media: CatalogueEntry['media']): boolean {
  const userLimit = media.user.max_attachments_per_request ?? Number.POSITIVE_INFINITY
  const toolLimit = media.tool_result.max_attachments_per_request ?? Number.POSITIVE_INFINITY
  if (userLimit === Number.POSITIVE_INFINITY && toolLimit === Number.POSITIVE_INFINITY) return false
  let user = 0
  let tool = 0
  const count = (rendering: Rendering) => {
    if (rendering.files === 0) return
    if (rendering.content?.type === 'prompt') user += rendering.files
    else tool += rendering.files
  }
  for (const group of groups) for (const item of group) count(item.rendering)
  for (const rendering of history) count(rendering)
  return user > userLimit || tool > toolLimit
}

/**
 * docs/guide/context.md (attachments): `max_attachments_per_request` counts a carrier's attachments across the whole context.
 * The oldest over it become markers, each with a translation warning.
 */
export function applyAttachmentLimits(
  items: PackItem[],
  media: CatalogueEntry['media'],
  rules: RetentionRules,
  renderKept: (item: PackItem) => Rendering | null,
  limitOfKind: (kind: PartKind) => number | null,
  images: ImageRule,
): TranslationWarning[] {
  const warnings: TranslationWarning[] = []
  for (const [carrier, policy] of [['prompt', media.user], ['tool_result', media.tool_result]] as const) {
    const limit = policy.max_attachments_per_request
    if (limit === null || limit === undefined) continue
    const carrying = items.filter((it) => it.rendering.content?.type === carrier)
    let over = carrying.reduce((n, it) => n + it.rendering.files, 0) - limit
    for (const item of carrying) {
      if (over <= 0) break
      const choices = choicesOfCode(item.code, item.media.length, item.refusals, limitOfKind(carrier))
      const attachments = choices.attachments.map((a): AttachmentChoice => {
        if (a !== 'send' || over <= 0) return a
        over--
        return 'limit'
      })
      item.code = choiceCode(choices.cut, attachments)
      item.rendering = renderKept(item) ?? renderTreated(item.body!, item.media, { ...choices, attachments }, rules, images)
      item.media.forEach((m, i) => {
        if (attachments[i] === 'limit') {
          warnings.push({
            code: 'attachment_replaced_by_marker',
            message: `the model takes at most ${limit} attachments per request here; older ones are sent as markers`,
            details: { ordinal: item.ordinal, mime: m.mime, limit },
          })
        }
      })
    }
  }
  return warnings
}

