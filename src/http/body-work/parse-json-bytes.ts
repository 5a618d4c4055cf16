import secureJson from 'secure-json-parse'
import type { Problem } from '../../domain/errors.ts'
import { findTooDeepInText } from '../../domain/json-depth.ts'

/** A JSON body, read: its value, a nesting problem (422 at its pointer), or why it is not JSON (400). */
export type ParsedJson = { kind: 'value'; value: unknown } | { kind: 'too_deep'; problem: Problem } | { kind: 'invalid'; message: string }

/**
 * Scans the bytes for nesting past the limit (linear, before any recursion), then parses them as
 * Fastify's own JSON parser does: secure-json-parse refusing `__proto__` and `constructor.prototype`
 * (src/http/plugins/bounded-body.ts). Runs on a worker thread for large bodies.
 */
export function parseJsonBytes(bytes: Uint8Array): ParsedJson {
  const problem = findTooDeepInText(bytes)
  if (problem) return { kind: 'too_deep', problem }
  try {
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')
    return { kind: 'value', value: secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }) }
  } catch (error) {
    return { kind: 'invalid', message: (error as Error).message }
  }
}
