import { fileTypeFromBuffer, supportedMimeTypes } from 'file-type'
import type { CatalogueEntry, MediaPolicy } from '../catalogue/catalogue-entry.ts'
import type { Problem } from '../errors.ts'
import { isTextType, parseMediaType, TEXT_CHARSETS } from './media-type.ts'
import type { Carrier } from './submission.ts'

export type AttachmentToCheck = {
  pointer: string
  carrier: Carrier
  /** The MIME type as declared: parsed here (case-insensitive, parameters allowed). */
  mime: string
  byteLength: number
  /** The file's first bytes (SNIFF_BYTES of them suffice): they must be the declared type's, when it has a signature. */
  leadingBytes: Uint8Array
  /** What the bytes are by their magic numbers (`sniffAttachment`); absent: sniffed here by signature only. */
  sniffed?: Sniffed | null
  /** What `inspectAttachment` found wrong with the bytes themselves (empty, cut, not UTF-8, too many pixels). */
  problem?: Problem | null
}

/** A type recognised in a file's bytes, with a short name for messages. */
export type Sniffed = { mime: string; name: string }

/** How many leading bytes sniffing reads: a PDF's header may follow up to 1024 bytes of junk, as readers allow. */
export const SNIFF_BYTES = 1024

const startsWith = (bytes: Uint8Array, signature: readonly number[], at = 0) => signature.every((b, i) => bytes[at + i] === b)
const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0))

/**
 * The types whose files announce themselves in their first bytes, by signature. A type not listed
 * (text/plain, image/svg+xml...) is taken as declared.
 */
const SIGNATURES: Record<string, { name: string; matches: (bytes: Uint8Array) => boolean }> = {
  'image/png': { name: 'PNG', matches: (b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  'image/jpeg': { name: 'JPEG', matches: (b) => startsWith(b, [0xff, 0xd8, 0xff]) },
  'image/gif': { name: 'GIF', matches: (b) => startsWith(b, ascii('GIF87a')) || startsWith(b, ascii('GIF89a')) },
  'image/webp': { name: 'WebP', matches: (b) => startsWith(b, ascii('RIFF')) && startsWith(b, ascii('WEBP'), 8) },
  'application/pdf': {
    name: 'PDF',
    matches: (b) => {
      const header = ascii('%PDF-')
      for (let at = 0; at + header.length <= Math.min(b.length, SNIFF_BYTES); at++) if (startsWith(b, header, at)) return true
      return false
    },
  },
}

/** The type the leading bytes show, among those with a signature; null when they show none of them. */
export function sniffMime(leadingBytes: Uint8Array): string | null {
  for (const [mime, signature] of Object.entries(SIGNATURES)) if (signature.matches(leadingBytes)) return mime
  return null
}

/** How many leading bytes the sniffing library reads (its documented need is 4100). */
export const LIBRARY_SNIFF_BYTES = 4104

const nameOf = (mime: string, ext?: string) => SIGNATURES[mime]?.name ?? (ext ? ext.toUpperCase() : mime)
const bySignature = (leadingBytes: Uint8Array): Sniffed | null => {
  const mime = sniffMime(leadingBytes)
  return mime ? { mime, name: nameOf(mime) } : null
}

/**
 * What a file is by its magic numbers, with the maintained `file-type` library (hundreds of
 * formats); the signatures above are the fallback only for what it does not see (a PDF header after
 * leading junk, which PDF readers accept). Reads the first LIBRARY_SNIFF_BYTES.
 */
export async function sniffAttachment(leadingBytes: Uint8Array): Promise<Sniffed | null> {
  const found = await fileTypeFromBuffer(leadingBytes.subarray(0, LIBRARY_SNIFF_BYTES))
  if (found) return { mime: found.mime, name: nameOf(found.mime, found.ext) }
  return bySignature(leadingBytes.subarray(0, SNIFF_BYTES))
}

/** Types the library reports under another name than the one customers declare. */
const SAME_TYPE: Readonly<Record<string, readonly string[]>> = { 'image/heic': ['image/heif'], 'image/heif': ['image/heic'] }
const isSameType = (declared: string, found: string) => found === declared || (SAME_TYPE[declared]?.includes(found) ?? false)

/** A problem when the bytes are not of the declared type (PNG bytes sent as image/jpeg or as text/plain), else null. */
function contentMismatch(a: AttachmentToCheck, declared: string): Problem | null {
  // Empty bytes are no type at all: the emptiness is the problem (inspectAttachment), not the type.
  if (a.byteLength === 0) return null
  const found = a.sniffed === undefined ? bySignature(a.leadingBytes) : a.sniffed
  const mismatch = (message: string): Problem => ({ in: 'body', pointer: `${a.pointer}/mime`, message })
  const are = (f: Sniffed) => `is declared ${declared} but its bytes are ${f.name} (${f.mime}): declare the type the bytes are`
  if (isTextType(declared)) {
    // Text is judged by being UTF-8 (inspectAttachment); a text file may well begin like some format.
    // Only bytes that are not text and that a format claims are named as that format.
    return found && a.problem ? mismatch(are(found)) : null
  }
  if (found && isSameType(declared, found.mime)) return null
  const signature = SIGNATURES[declared]
  if (signature?.matches(a.leadingBytes)) return null
  if (found) return mismatch(are(found))
  if (signature || supportedMimeTypes.has(declared as never)) {
    return mismatch(`is declared ${declared} but its bytes do not start as a ${nameOf(declared)} file does`)
  }
  // A type no sniffer knows (image/svg+xml): taken as declared; the model's list decides.
  return null
}

/** A problem with the declared type itself: not a MIME type, or text in a charset other than UTF-8. */
function typeProblem(a: AttachmentToCheck): { essence: string } | Problem {
  const type = parseMediaType(a.mime)
  const at = `${a.pointer}/mime`
  if (!type) return { in: 'body', pointer: at, message: `is not a MIME type: write type/subtype, optionally followed by ; name=value parameters` }
  const charset = type.parameters.charset?.toLowerCase()
  if (charset !== undefined && isTextType(type.essence) && !(TEXT_CHARSETS as readonly string[]).includes(charset) && charset !== 'utf8') {
    return { in: 'body', pointer: at, message: `declares charset=${type.parameters.charset}: text attachments are taken as UTF-8 only; convert the text to UTF-8 and declare charset=utf-8 or none` }
  }
  return { essence: type.essence }
}

const policyOf = (model: Pick<CatalogueEntry, 'media'>, carrier: Carrier): MediaPolicy => {
  switch (carrier) {
    case 'user_message':
      return model.media.user
    case 'tool_result':
      return model.media.tool_result
    case 'assistant_message':
      return model.media.assistant
    default: {
      const unknown: never = carrier
      throw new Error(`unknown carrier ${String(unknown)}`)
    }
  }
}

/**
 * docs/guide/chats-and-ledger.md (attachments): new attachments are checked against the selected model's media capabilities
 * before anything is written, and against their own bytes (docs/decisions/032-attachment-checks.md): the declared type
 * must parse and be what the bytes are, and the bytes must be whole. `alreadyInContext` counts attachments per carrier the history brings.
 */
export function checkAttachments(
  attachments: AttachmentToCheck[],
  model: Pick<CatalogueEntry, 'name' | 'media'>,
  alreadyInContext: Partial<Record<Carrier, number>> = {},
): Problem[] {
  const problems: Problem[] = []
  const counted: Partial<Record<Carrier, number>> = { ...alreadyInContext }
  for (const a of attachments) {
    const policy = policyOf(model, a.carrier)
    counted[a.carrier] = (counted[a.carrier] ?? 0) + 1
    const type = typeProblem(a)
    const mismatch = 'essence' in type ? contentMismatch(a, type.essence) : type
    if (mismatch) {
      problems.push(mismatch)
    } else if (a.problem) {
      problems.push(a.problem)
    } else if (!policy.mime_types.includes((type as { essence: string }).essence)) {
      const accepted = policy.mime_types.length === 0 ? 'none' : policy.mime_types.join(', ')
      problems.push({ in: 'body', pointer: `${a.pointer}/mime`, message: `${model.name} does not take ${a.mime} in a ${a.carrier}; it takes: ${accepted}` })
    } else if (a.byteLength > policy.max_bytes_per_attachment) {
      problems.push({
        in: 'body',
        pointer: `${a.pointer}/data_base64`,
        message: `is ${a.byteLength} bytes; ${model.name} takes at most ${policy.max_bytes_per_attachment} per attachment`,
      })
    }
    const limit = policy.max_attachments_per_request
    if (limit !== null && limit !== undefined && counted[a.carrier]! > limit) {
      problems.push({ in: 'body', pointer: a.pointer, message: `exceeds ${model.name}'s ${limit} attachments per request in a ${a.carrier}` })
    }
  }
  return problems
}

/** Whether a UTF-16 code unit is in the standard base64 alphabet (A-Z a-z 0-9 + /). */
const isBase64Char = (c: number): boolean =>
  (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47

/**
 * Standard base64 only: no data-URI prefix, no URL alphabet, correct padding.
 *
 * Accepts exactly what `^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$` does: a
 * length that is a multiple of 4, alphabet characters only, and at most two '=' at the very end.
 * No whitespace, no '=' inside. The empty string is valid (no bytes). No regex: a backtracking regex
 * overflowed the stack on attachments of a few MiB (issue 11).
 *
 * The last four characters are checked one by one. Everything before them is checked by decoding
 * (needed anyway) and encoding again, both native: Node's decoder skips characters outside the
 * alphabet and reads the url-safe one, so any such character changes the length or the text of the
 * re-encoding; alphabet-only quads re-encode to themselves. The last quad is left out of the
 * comparison because its unused low bits need not be zero ('QR==' is accepted, as before). A
 * character-by-character scan in JavaScript held the event loop for about half a second on 20 MiB.
 */
export function decodeBase64Strict(value: string): Buffer | null {
  const length = value.length
  if (length % 4 !== 0) return null
  if (length === 0) return Buffer.alloc(0)
  const lastQuad = length - 4
  let padding = 0
  if (value.charCodeAt(length - 1) === 61) padding = value.charCodeAt(length - 2) === 61 ? 2 : 1
  for (let i = lastQuad; i < length - padding; i++) {
    if (!isBase64Char(value.charCodeAt(i))) return null
  }
  const bytes = Buffer.from(value, 'base64')
  const again = bytes.toString('base64')
  if (again.length !== length || again.slice(0, lastQuad) !== value.slice(0, lastQuad)) return null
  return bytes
}
