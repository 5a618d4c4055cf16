import { createWebSocketInspector } from '@statelyai/inspect'
import type { InspectionEvent, Observer } from 'xstate'

const CONTENT_KEYS = new Set(['text', 'data_base64', 'bytes', 'data', 'prompt', 'instructions', 'arguments', 'input', 'content', 'delta'])

/** Copies a value for the inspector with prompt text and attachment bytes replaced by their size. */
export function redactContent(value: unknown, depth = 0): unknown {
  if (depth > 12) return '[…]'
  if (typeof value === 'function') return undefined
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return `[${value.length} bytes]`
  if (value instanceof AbortController) return { aborted: value.signal.aborted }
  if (Array.isArray(value)) return value.map((v) => redactContent(v, depth + 1))
  if (value === null || typeof value !== 'object') return value
  const copy: Record<string, unknown> = {}
  for (const [key, child] of Object.entries(value)) {
    if (CONTENT_KEYS.has(key) && (typeof child === 'string' || Array.isArray(child) || child instanceof Uint8Array)) {
      copy[key] = typeof child === 'string' ? `[${child.length} chars redacted]` : `[redacted]`
    } else {
      copy[key] = redactContent(child, depth + 1)
    }
  }
  return copy
}

/**
 * With STATELY_INSPECT=ws://host:port, chat actors report to Stately's inspector through that relay
 * (`npm run inspect`). Content stays out unless STATELY_INSPECT_CONTENT=on.
 */
export function createInspection(env: NodeJS.ProcessEnv): Observer<InspectionEvent> | undefined {
  const url = env.STATELY_INSPECT
  if (!url) return undefined
  const withContent = env.STATELY_INSPECT_CONTENT === 'on'
  const sanitize = <T>(value: T): T => (withContent ? value : (redactContent(value) as T))
  const inspector = createWebSocketInspector({ url, sanitizeEvent: sanitize, sanitizeContext: sanitize })
  return inspector.inspect
}
