import type { CatalogueEntry, MediaPolicy } from '../catalogue/catalogue-entry.ts'
import type { Problem } from '../errors.ts'
import type { Carrier } from './submission.ts'

export type AttachmentToCheck = { pointer: string; carrier: Carrier; mime: string; byteLength: number }

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
 * Spec §4.2 rule 10: new attachments are checked against the selected model's media capabilities
 * before anything is written. `alreadyInContext` counts attachments per carrier the history brings.
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
    if (!policy.mime_types.includes(a.mime.toLowerCase())) {
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

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** Standard base64 only: no data-URI prefix, no URL alphabet, correct padding. */
export function decodeBase64Strict(value: string): Buffer | null {
  return BASE64.test(value) ? Buffer.from(value, 'base64') : null
}
