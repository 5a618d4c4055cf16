import { imageSize } from 'image-size'
import type { Submission, PreparedPart } from '../actors/turn-types.ts'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import { validateToolBundle } from '../domain/config/validate-tool-bundle.ts'
import { estimatePartTokens } from '../domain/context/estimate-part-tokens.ts'
import { UnsupportedAttachmentError, ValidationError, type Problem } from '../domain/errors.ts'
import type { PartBody } from '../domain/parts.ts'
import { checkAttachments, decodeBase64Strict, SNIFF_BYTES, type AttachmentToCheck } from '../domain/turns/check-attachments.ts'
import type { DecodedMedia, SubmittedMedia, TurnRequest } from '../domain/turns/submission.ts'
import { applyToolResultHygiene } from '../domain/turns/tool-result-hygiene.ts'
import { checkUserMetadata } from '../domain/user-metadata.ts'
import { newId } from '../domain/new-id.ts'
import { countPdfPages } from '../domain/turns/count-pdf-pages.ts'

function decodeMedia(media: SubmittedMedia, pointer: string, problems: Problem[]): DecodedMedia | null {
  const bytes = decodeBase64Strict(media.data_base64)
  if (!bytes) {
    problems.push({ in: 'body', pointer: `${pointer}/data_base64`, message: 'is not standard base64 (no data: prefix, padded, + and / alphabet)' })
    return null
  }
  const mime = media.mime.toLowerCase()
  let width: number | null = null
  let height: number | null = null
  if (mime.startsWith('image/')) {
    try {
      const size = imageSize(bytes)
      width = size.width ?? null
      height = size.height ?? null
    } catch {
      // Not a decodable image header: the model will judge it; dimensions stay unknown.
    }
  }
  const page_count = mime === 'application/pdf' ? countPdfPages(bytes) : null
  return { mime, bytes, filename: media.filename ?? null, width, height, page_count }
}

/**
 * Everything about a turn that can be checked without the chat's state: limits, attachments against
 * the model, tool-result hygiene, request-level tools. Throws 422s; writes nothing.
 */
export function prepareSubmission(
  request: TurnRequest,
  model: CatalogueEntry,
  context: { orgId: string; apiKeyId: string | null; chatId: string; namespace: string | null },
): Submission {
  const problems: Problem[] = []
  const metadata = checkUserMetadata(request.user_metadata ?? {}, '/user_metadata')
  if (metadata) problems.push(metadata)
  if (request.retry_of && request.input.length > 0) {
    problems.push({ in: 'body', pointer: '/input', message: 'must be empty when retry_of is set: a retry appends no input' })
  }
  if (request.tools) {
    for (const p of validateToolBundle(request.tools, '/tools')) problems.push({ in: 'body', ...p })
  }

  const attachments: AttachmentToCheck[] = []
  const input: PreparedPart[] = []
  request.input.forEach((part, i) => {
    const at = `/input/${i}`
    const media = (part.media ?? []).flatMap((m, j) => {
      const decoded = decodeMedia(m, `${at}/media/${j}`, problems)
      if (decoded) attachments.push({ pointer: `${at}/media/${j}`, carrier: part.type === 'prompt' ? 'user_message' : 'tool_result', mime: decoded.mime, byteLength: decoded.bytes.length, leadingBytes: decoded.bytes.subarray(0, SNIFF_BYTES) })
      return decoded ? [decoded] : []
    })
    let body: PartBody
    if (part.type === 'prompt') {
      if ((part.text ?? '') === '' && media.length === 0) problems.push({ in: 'body', pointer: at, message: 'a prompt needs text or media' })
      body = { type: 'prompt', text: part.text ?? '' }
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
    input.push({ body, media, tokens: estimatePartTokens(body, media.map((m) => ({ mime: m.mime, byteLen: m.bytes.length, width: m.width, height: m.height, pageCount: m.page_count }))) })
  })
  if (problems.length > 0) throw new ValidationError(problems)

  const unsupported = checkAttachments(attachments, model)
  if (unsupported.length > 0) {
    throw new UnsupportedAttachmentError(unsupported[0]!.message, { problems: unsupported }, 'see the model\'s media capabilities in GET /api/v1/models')
  }
  return { ...context, runId: newId(), request, model, input }
}
