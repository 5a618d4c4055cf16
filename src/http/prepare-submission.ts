import { Buffer } from 'node:buffer'
import type { Submission, PreparedPart } from '../actors/turn-types.ts'
import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import { validateToolBundle } from '../domain/config/validate-tool-bundle.ts'
import { estimatePartTokens } from '../domain/context/estimate-part-tokens.ts'
import { UnsupportedAttachmentError, ValidationError, type Problem } from '../domain/errors.ts'
import type { PartBody } from '../domain/parts.ts'
import {
  checkAttachments,
  decodeBase64Strict,
  LIBRARY_SNIFF_BYTES,
  SNIFF_BYTES,
  sniffAttachment,
  type AttachmentToCheck,
  type Sniffed,
} from '../domain/turns/check-attachments.ts'
import { maxImageSide } from '../domain/turns/image-limits.ts'
import { inspectAttachment } from '../domain/turns/inspect-attachment.ts'
import { parseMediaType } from '../domain/turns/media-type.ts'
import type { DecodedMedia, SubmittedMedia, TurnRequest } from '../domain/turns/submission.ts'
import { applyToolResultHygiene } from '../domain/turns/tool-result-hygiene.ts'
import { checkUserMetadata } from '../domain/user-metadata.ts'
import { newId } from '../domain/new-id.ts'

/** What each submitted attachment's bytes are, by input index then media index (`sniffSubmission`). */
export type SniffedMedia = readonly (readonly (Sniffed | null)[])[]

/** Base64 characters that decode to the LIBRARY_SNIFF_BYTES a sniff reads. */
const SNIFF_CHARS = Math.ceil(LIBRARY_SNIFF_BYTES / 3) * 4

/**
 * Sniffs every attachment of a turn with the file-type library, which answers asynchronously: only
 * each file's first few KiB are decoded for it, so a 20 MiB attachment costs no more than a small
 * one. Bad base64 is left to prepareSubmission, which refuses it.
 */
export async function sniffSubmission(request: TurnRequest): Promise<SniffedMedia> {
  return Promise.all(
    request.input.map((part) =>
      Promise.all((part.media ?? []).map((m) => sniffAttachment(Buffer.from(m.data_base64.slice(0, SNIFF_CHARS), 'base64')))),
    ),
  )
}

type Decoded = { media: DecodedMedia; check: AttachmentToCheck }

function decodeMedia(media: SubmittedMedia, pointer: string, problems: Problem[], model: CatalogueEntry, sniffed: Sniffed | null | undefined): Decoded | null {
  const bytes = decodeBase64Strict(media.data_base64)
  if (!bytes) {
    problems.push({ in: 'body', pointer: `${pointer}/data_base64`, message: 'is not standard base64 (no data: prefix, padded, + and / alphabet)' })
    return null
  }
  const type = parseMediaType(media.mime)
  // An unparseable type is refused by checkAttachments at /mime; its bytes are not inspected.
  const inspection = type ? inspectAttachment(pointer, type, bytes, maxImageSide(model.provider)) : null
  const mime = type ? type.essence : media.mime.toLowerCase()
  return {
    media: { mime, bytes, filename: media.filename ?? null, width: inspection?.width ?? null, height: inspection?.height ?? null, page_count: inspection?.page_count ?? null },
    check: {
      pointer,
      carrier: 'user_message',
      mime: media.mime,
      byteLength: bytes.length,
      leadingBytes: bytes.subarray(0, SNIFF_BYTES),
      ...(sniffed === undefined ? {} : { sniffed }),
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
  /** From `sniffSubmission`; without it the bytes are sniffed by the built-in signatures only. */
  sniffed?: SniffedMedia,
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
      const decoded = decodeMedia(m, `${at}/media/${j}`, problems, model, sniffed?.[i]?.[j])
      if (!decoded) return []
      attachments.push({ ...decoded.check, carrier: part.type === 'prompt' ? 'user_message' : 'tool_result' })
      return [decoded.media]
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
