import type { Submission, PreparedPart } from '../actors/turn-types.ts'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import { validateResponseSchema, validateToolBundle } from '../domain/config/validate-tool-bundle.ts'
import { estimatePartTokens } from '../domain/context/estimate-part-tokens.ts'
import { imageRuleOf } from '../domain/context/image-tokens.ts'
import { UnsupportedAttachmentError, ValidationError, type Problem } from '../domain/errors.ts'
import type { PartBody } from '../domain/parts.ts'
import { checkAttachments, SNIFF_BYTES, type AttachmentToCheck } from '../domain/turns/check-attachments.ts'
import type { DecodedAttachment } from '../domain/turns/decode-attachment.ts'
import { maxImageSide } from '../domain/turns/image-limits.ts'
import { parseMediaType } from '../domain/turns/media-type.ts'
import type { AttachmentBytes, AttachmentRef, DecodedMedia, SubmittedMedia, TurnRequest } from '../domain/turns/submission.ts'
import { applyToolResultHygiene } from '../domain/turns/tool-result-hygiene.ts'
import { checkUserMetadata } from '../domain/user-metadata.ts'
import { newId } from '../domain/new-id.ts'
import type { BodyWork } from './body-work/body-work.ts'

/** Each submitted attachment decoded, by input index then media index (`decodeSubmission`). */
export type DecodedSubmission = readonly (readonly DecodedAttachment[])[]

/**
 * Decodes every attachment of a turn, all at once: large ones on the body-work pool's threads
 * (src/http/body-work/body-work.ts), small ones in place. A turn without attachments decodes nothing.
 */
export async function decodeSubmission(request: TurnRequest, model: CatalogueEntry, work: Pick<BodyWork, 'decodeAttachment'>): Promise<DecodedSubmission> {
  const maxSide = maxImageSide(model.provider)
  return Promise.all(
    request.input.map((part, i) =>
      Promise.all((part.media ?? []).map((m, j) => work.decodeAttachment({ data_base64: m.data_base64, mime: m.mime, pointer: `/input/${i}/media/${j}`, maxImageSide: maxSide }))),
    ),
  )
}

type Decoded = { media: DecodedMedia & { sha256: string }; check: AttachmentToCheck }

function decodedMedia(media: SubmittedMedia, pointer: string, problems: Problem[], decoded: DecodedAttachment): Decoded | null {
  const { bytes, inspection, sha256 } = decoded
  if (!bytes || sha256 === null) {
    problems.push({ in: 'body', pointer: `${pointer}/data_base64`, message: 'is not standard base64 (no data: prefix, padded, + and / alphabet)' })
    return null
  }
  const type = parseMediaType(media.mime)
  const mime = type ? type.essence : media.mime.toLowerCase()
  return {
    media: { mime, bytes, sha256, filename: media.filename ?? null, width: inspection?.width ?? null, height: inspection?.height ?? null, page_count: inspection?.page_count ?? null },
    check: {
      pointer,
      carrier: 'user_message',
      mime: media.mime,
      byteLength: bytes.length,
      leadingBytes: bytes.subarray(0, SNIFF_BYTES),
      sniffed: decoded.sniffed,
      problem: inspection?.problem ?? null,
    },
  }
}

/**
 * Everything about a turn that can be checked without the chat's state: limits, attachments against
 * the model, tool-result hygiene, request-level tools. Throws 422s; writes nothing.
 */
export function prepareSubmission(
  request: TurnRequest,
  model: CatalogueEntry,
  context: { orgId: string; apiKeyId: string | null; chatId: string; namespace: string | null },
  /** From `decodeSubmission`; a turn without attachments needs none. */
  decoded: DecodedSubmission = [],
): { submission: Submission; attachments: AttachmentBytes } {
  const problems: Problem[] = []
  const metadata = checkUserMetadata(request.user_metadata ?? {}, '/user_metadata')
  if (metadata) problems.push(metadata)
  if (request.retry_of && request.input.length > 0) {
    problems.push({ in: 'body', pointer: '/input', message: 'must be empty when retry_of is set: a retry appends no input' })
  }
  if (request.tools) {
    for (const p of validateToolBundle(request.tools, '/tools')) problems.push({ in: 'body', ...p })
  }
  if (request.response_format?.type === 'json_schema') {
    for (const p of validateResponseSchema(request.response_format.schema, '/response_format/schema')) problems.push({ in: 'body', ...p })
  }

  const attachments: AttachmentToCheck[] = []
  const input: PreparedPart[] = []
  const bytes = new Map<string, Buffer>()
  request.input.forEach((part, i) => {
    const at = `/input/${i}`
    const media = (part.media ?? []).flatMap((m, j) => {
      const attachment = decoded[i]?.[j]
      if (!attachment) throw new Error(`attachment ${at}/media/${j} was not decoded: pass decodeSubmission's result`)
      const prepared = decodedMedia(m, `${at}/media/${j}`, problems, attachment)
      if (!prepared) return []
      attachments.push({ ...prepared.check, carrier: part.type === 'prompt' ? 'user_message' : 'tool_result' })
      const { bytes: content, ...ref } = prepared.media
      bytes.set(ref.sha256, content)
      return [{ ...ref, byte_len: content.length } satisfies AttachmentRef]
    })
    let body: PartBody
    if (part.type === 'prompt') {
      if ((part.text ?? '') === '' && media.length === 0) problems.push({ in: 'body', pointer: at, message: 'a prompt needs text or media' })
      body = { type: 'prompt', text: part.text ?? '' }
    } else if (part.type === 'assistant_message') {
      if (part.text === '') problems.push({ in: 'body', pointer: at, message: "an assistant's message needs text" })
      if (media.length > 0) problems.push({ in: 'body', pointer: `${at}/media`, message: "an assistant's message carries no attachments" })
      body = { type: 'message', text: part.text }
      input.push({ body, media: [], tokens: estimatePartTokens(body), seeded: true })
      return
    } else {
      const trust = part.trust ?? 'customer_data'
      const hygiene = applyToolResultHygiene(part.text ?? '', trust)
      if (!hygiene.ok) problems.push({ in: 'body', pointer: `${at}/text`, message: hygiene.message })
      body = {
        type: 'tool_result',
        text: hygiene.ok ? hygiene.text : '',
        is_error: part.is_error ?? false,
        tool_name: part.tool_name,
        tool_use_id: part.tool_use_id,
        trust,
      }
    }
    input.push({ body, media, tokens: estimatePartTokens(body, media.map((m) => ({ mime: m.mime, byteLen: m.byte_len, width: m.width, height: m.height, pageCount: m.page_count })), imageRuleOf(model.provider)) })
  })
  if (problems.length > 0) throw new ValidationError(problems)

  const unsupported = checkAttachments(attachments, model)
  if (unsupported.length > 0) {
    throw new UnsupportedAttachmentError(unsupported[0]!.message, { problems: unsupported }, 'see the model\'s media capabilities in GET /api/v1/models')
  }
  // The prepared input replaces the request's: the submission (kept by the chat's actor and its run
  // until settlement) holds neither the base64 nor the bytes, only each attachment's hash (decision 049);
  // the bytes go to the actor host beside it (`host.submit(submission, attachments)`).
  return { submission: { ...context, runId: newId(), request: { ...request, input: [] }, model, input }, attachments: bytes }
}
