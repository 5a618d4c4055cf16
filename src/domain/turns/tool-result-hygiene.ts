import type { TrustLevel } from '../parts.ts'

export const CUSTOMER_DATA_MAX_BYTES = 1024 * 1024
export const UNTRUSTED_MAX_BYTES = 256 * 1024

// Control characters other than tab (\x09) and newline (\x0A).
const CONTROL_CHARACTERS = /[\x00-\x08\x0B-\x1F\x7F]/g

export type HygieneResult = { ok: true; text: string } | { ok: false; message: string }

/** docs/guide/tool-calls.md: tool result text as stored, by trust level. */
export function applyToolResultHygiene(text: string, trust: TrustLevel): HygieneResult {
  switch (trust) {
    case 'trusted':
      return { ok: true, text }
    case 'customer_data': {
      const bytes = Buffer.byteLength(text, 'utf8')
      return bytes > CUSTOMER_DATA_MAX_BYTES
        ? { ok: false, message: `is ${bytes} bytes; customer_data tool results are limited to ${CUSTOMER_DATA_MAX_BYTES} bytes` }
        : { ok: true, text }
    }
    case 'untrusted': {
      const clean = text.replace(CONTROL_CHARACTERS, '')
      const buffer = Buffer.from(clean, 'utf8')
      if (buffer.length <= UNTRUSTED_MAX_BYTES) return { ok: true, text: clean }
      // Cut on a character boundary: decoding a truncated buffer drops a split trailing character.
      const cut = buffer.subarray(0, UNTRUSTED_MAX_BYTES).toString('utf8').replace(/\uFFFD$/, '')
      return { ok: true, text: `${cut}\n[… untrusted tool result cut at ${UNTRUSTED_MAX_BYTES} bytes of ${buffer.length} …]` }
    }
    default: {
      const unknown: never = trust
      throw new Error(`unknown trust level ${String(unknown)}`)
    }
  }
}
