import { createWebSocketInspector } from '@statelyai/inspect'
import type { InspectionEvent, Observer } from 'xstate'

/**
 * Keys whose string values are identifiers, states and enums the code chose, never a customer's
 * words: they reach the inspector as they are. Every other string anywhere in a message is replaced
 * by its length, so content sent under a name nobody thought of stays in the process too.
 */
const SAFE_STRING_KEYS = new Set([
  'type',
  'status',
  'kind',
  'code',
  'role',
  'id',
  'xstate$$type',
  'sessionId',
  'rootId',
  'parentId',
  'sourceId',
  'systemId',
  'createdAt',
  'created_at',
  'at',
  'chatId',
  'runId',
  'orgId',
  'apiKeyId',
  'keyId',
  'nodeId',
  'tool_use_id',
  'toolCallId',
  'tool_name',
  'toolName',
  'mime',
  'mediaType',
  'media_type',
  'stopReason',
  'stop_reason',
  'finishReason',
  'reasoningEffort',
  'reasoning_effort',
  'namespace',
  'provider',
  'modelServed',
  'name',
])

/**
 * Keys that hold content whatever its shape (a prompt is an array of messages, tool arguments an
 * object or a string, an attachment bytes or base64): the whole value is replaced by its size.
 */
const CONTENT_KEYS = new Set([
  'prompt',
  'text',
  'data',
  'data_base64',
  'bytes',
  'media',
  'arguments',
  'args',
  'content',
  'delta',
  'instructions',
  'system',
  'refusal',
  'replay',
  'user_metadata',
  'userMetadata',
  'title',
])

/** The snapshot fields that describe the machine (its state), not what it carries. */
const SNAPSHOT_STATE_KEYS = new Set(['status', 'value', 'tags'])
/** An inspection event's own fields: where it comes from and when; `definition` is the machine's code. */
const EVENT_OWN_KEYS = new Set(['type', 'name', 'sessionId', 'rootId', 'parentId', 'sourceId', 'id', 'createdAt', '_version', 'definition'])

const MAX_DEPTH = 12
const MAX_SAFE_STRING = 200
/** What this file writes in place of content: redacting twice (the library may) changes nothing. */
const REDACTED = /^\[(\d+ (chars|bytes|items|keys)|redacted|circular|…|[A-Z]\w*)\]$/

function sizeOf(value: unknown): string {
  if (typeof value === 'string') return REDACTED.test(value) ? value : `[${value.length} chars]`
  if (value instanceof Uint8Array) return `[${value.byteLength} bytes]`
  if (Array.isArray(value)) return `[${value.length} items]`
  if (value !== null && typeof value === 'object') return `[${Object.keys(value).length} keys]`
  return '[redacted]'
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * Copies a value for the inspector with content replaced by its size: strings outside
 * SAFE_STRING_KEYS, every value under CONTENT_KEYS, bytes anywhere. Numbers, booleans and the
 * shape of objects stay; class instances (a stream channel, an HTTP reply, an abort signal) become
 * their class name, since walking them could reach a socket or a request's headers.
 */
export function redactContent(value: unknown, key = '', depth = 0, seen = new WeakSet<object>()): unknown {
  if (value === null || value === undefined || typeof value === 'number' || typeof value === 'boolean') return value
  if (typeof value === 'string') return SAFE_STRING_KEYS.has(key) && value.length <= MAX_SAFE_STRING ? value : sizeOf(value)
  if (typeof value === 'bigint') return value.toString()
  if (typeof value !== 'object') return undefined // functions and symbols are not data
  if (CONTENT_KEYS.has(key) || value instanceof Uint8Array) return sizeOf(value)
  if (depth > MAX_DEPTH) return '[…]'
  if (seen.has(value)) return '[circular]'
  seen.add(value)
  try {
    if (Array.isArray(value)) return value.map((item) => redactContent(item, key, depth + 1, seen))
    if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString()
    if (value instanceof Error) {
      return { name: value.name, code: redactContent((value as { code?: unknown }).code, 'code', depth + 1, seen), message: sizeOf(value.message) }
    }
    if (!isPlainObject(value)) return `[${value.constructor?.name || 'Object'}]`
    const copy: Record<string, unknown> = {}
    for (const [childKey, child] of Object.entries(value)) copy[childKey] = redactContent(child, childKey, depth + 1, seen)
    return copy
  } finally {
    seen.delete(value)
  }
}

/** A snapshot: its state as it is, what it carries (context, input, output, error, children) redacted. */
function redactSnapshot(snapshot: unknown): unknown {
  if (snapshot === null || typeof snapshot !== 'object') return redactContent(snapshot)
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(snapshot)) {
    copy[key] = SNAPSHOT_STATE_KEYS.has(key) ? stateValue(value) : redactContent(value, key)
  }
  return copy
}

/** A state value is state names (the machine's own), nested for parallel and compound states. */
function stateValue(value: unknown): unknown {
  if (typeof value === 'string' || value === null || value === undefined) return value
  if (Array.isArray(value)) return value.map(stateValue)
  if (typeof value === 'object' && isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, stateValue(v)]))
  return redactContent(value)
}

/**
 * Every message that leaves the process for the inspector, whole: the event an actor received,
 * its snapshot (context, input, output, error), an actor's creation. Only the event's own fields
 * (ids, times, the machine's definition) and the snapshot's state pass as they are.
 */
export function redactInspectionEvent(event: unknown): unknown {
  if (event === null || typeof event !== 'object') return redactContent(event)
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(event)) {
    if (key === 'snapshot') copy[key] = redactSnapshot(value)
    else if (EVENT_OWN_KEYS.has(key) && (typeof value === 'string' || value === null || value === undefined)) copy[key] = value
    else copy[key] = redactContent(value, key)
  }
  return copy
}

export type InspectionSetting = { kind: 'off' } | { kind: 'on'; url: string; content: 'redacted' | 'sent' }

/** STATELY_INSPECT=ws://host:port turns inspection on; STATELY_INSPECT_CONTENT=on sends content as it is. */
export function inspectionSetting(env: NodeJS.ProcessEnv): InspectionSetting {
  const url = env.STATELY_INSPECT
  if (!url) return { kind: 'off' }
  return { kind: 'on', url, content: env.STATELY_INSPECT_CONTENT === 'on' ? 'sent' : 'redacted' }
}

/**
 * With STATELY_INSPECT=ws://host:port, chat actors report to Stately's inspector through that relay
 * (`npm run inspect`). Content stays out unless STATELY_INSPECT_CONTENT=on: the library's
 * sanitizers see only contexts and events, so redaction is its `serialize`, which every message
 * passes through last.
 */
export function createInspection(env: NodeJS.ProcessEnv): Observer<InspectionEvent> | undefined {
  const setting = inspectionSetting(env)
  switch (setting.kind) {
    case 'off':
      return undefined
    case 'on': {
      const redact = setting.content === 'redacted' ? { serialize: (event: unknown) => redactInspectionEvent(event) as never } : {}
      return createWebSocketInspector({ url: setting.url, ...redact }).inspect
    }
    default: {
      const unknownSetting: never = setting
      throw new Error(`unknown inspection setting ${JSON.stringify(unknownSetting)}`)
    }
  }
}

/**
 * Whether something answers HTTP where the relay should be (the relay serves its bridge page on the
 * same port as its WebSocket). Any answer counts; a refused or silent port within `timeoutMs` does not.
 */
export async function relayAnswers(url: string, timeoutMs = 1_000): Promise<boolean> {
  let page: URL
  try {
    page = new URL(url)
  } catch {
    return false
  }
  page.protocol = page.protocol === 'wss:' ? 'https:' : 'http:'
  try {
    const response = await fetch(page, { signal: AbortSignal.timeout(timeoutMs) })
    await response.arrayBuffer()
    return true
  } catch {
    return false
  }
}
