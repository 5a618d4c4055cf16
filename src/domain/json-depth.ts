import type { Problem } from './errors.ts'
import { escapeToken } from './json-pointer.ts'

/**
 * Nesting limits for request bodies, checked without recursion before anything recursive
 * (schema validation, JSON.stringify, JSON Schema compilation) touches the value: V8's
 * JSON.parse is iterative, but those are not, and a few thousand levels overflow the stack.
 *
 * Depth counts containers (objects and arrays): `{}` is 1, `{"a":[1]}` is 2.
 */
/** user_metadata is at most 1024 bytes anyway; 64 levels is far more than any real use. */
export const USER_METADATA_MAX_DEPTH = 64
/** A tool's input_schema: a JSON Schema spends two levels per nested property (`properties` / name). */
export const INPUT_SCHEMA_MAX_DEPTH = 128
/** Any JSON body, counted from its root (covers every other field). */
export const BODY_MAX_DEPTH = 256

type Frame = { value: object; depth: number; limit: number; scope: string; parent: Frame | null; key: string }

function pointerOf(frame: Frame): string {
  const tokens: string[] = []
  for (let f: Frame | null = frame; f && f.parent; f = f.parent) tokens.push(escapeToken(f.key))
  return tokens.length === 0 ? '' : `/${tokens.reverse().join('/')}`
}

/** The limit a child at `key` of `parent` starts, if it is the root of a limited field. */
function scopeOf(parent: Frame, key: string): { limit: number; scope: string } | null {
  // /user_metadata (chat creation, turns)
  if (parent.parent === null && key === 'user_metadata') return { limit: USER_METADATA_MAX_DEPTH, scope: 'user_metadata' }
  // /definitions/N/input_schema (tool bundles) and /tools/N/input_schema (request-level tools)
  if (key === 'input_schema') {
    const list = parent.parent
    if (list && Array.isArray(list.value) && list.parent !== null && list.parent.parent === null && (list.key === 'definitions' || list.key === 'tools')) {
      return { limit: INPUT_SCHEMA_MAX_DEPTH, scope: 'input_schema' }
    }
  }
  return null
}

/**
 * The first value nested deeper than its limit, as a 422 problem pointing at it; null when the
 * body is within every limit. Iterative: a body nested a million levels costs no stack.
 */
export function findTooDeep(body: unknown, where: Problem['in'] = 'body'): Problem | null {
  if (body === null || typeof body !== 'object') return null
  const stack: Frame[] = [{ value: body, depth: 1, limit: BODY_MAX_DEPTH, scope: 'body', parent: null, key: '' }]
  while (stack.length > 0) {
    const frame = stack.pop()!
    if (frame.depth > frame.limit) {
      const what = frame.scope === 'body' ? 'the request body' : frame.scope
      return { in: where, pointer: pointerOf(frame), message: `is nested too deeply: ${what} may nest at most ${frame.limit} levels of objects and arrays` }
    }
    const value = frame.value as Record<string, unknown>
    const keys = Array.isArray(value) ? null : Object.keys(value)
    const count = keys ? keys.length : (value as unknown as unknown[]).length
    for (let i = count - 1; i >= 0; i--) {
      const key = keys ? keys[i]! : String(i)
      const child = value[key]
      if (child === null || typeof child !== 'object') continue
      const scope = scopeOf(frame, key)
      stack.push(
        scope
          ? { value: child, depth: 1, limit: scope.limit, scope: scope.scope, parent: frame, key }
          : { value: child, depth: frame.depth + 1, limit: frame.limit, scope: frame.scope, parent: frame, key },
      )
    }
  }
  return null
}

/*
 * The same limits on the raw text of a body, before JSON.parse (issue 22, decision 030): V8's
 * JSON.parse costs about a second per million levels, so a body nested past BODY_MAX_DEPTH is
 * refused from its bytes. Only bytes below 0x80 matter (quote, backslash, brackets), and no byte of
 * a multi-byte UTF-8 character is below 0x80, so the scan reads the Buffer as it arrived.
 */

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const COLON = 0x3a
const COMMA = 0x2c

/** What the depth scan does with each byte: 0, nothing (all but quotes and brackets). */
const STRING = 1
const OPENS = 2
const CLOSES = 3
const BYTE_KIND = new Uint8Array(256)
BYTE_KIND[QUOTE] = STRING
BYTE_KIND[OPEN_ARRAY] = OPENS
BYTE_KIND[OPEN_OBJECT] = OPENS
BYTE_KIND[CLOSE_ARRAY] = CLOSES
BYTE_KIND[CLOSE_OBJECT] = CLOSES

/**
 * The offset of the first `[` or `{` that opens a container past `limit` levels from the root, or
 * -1. Brackets inside strings do not count; a backslash in a string escapes the next byte. One
 * pass, no allocation: malformed text is left for JSON.parse to refuse.
 */
export function firstTooDeepOffset(bytes: Uint8Array, limit: number = BODY_MAX_DEPTH): number {
  const buffer = asBuffer(bytes)
  const n = buffer.length
  let depth = 0
  for (let i = 0; i < n; i++) {
    // One table load decides for the common byte (anything but a quote or a bracket): skip it.
    const kind = BYTE_KIND[buffer[i]!]!
    if (kind === 0) continue
    if (kind === STRING) i = closingQuote(buffer, i)
    else if (kind === OPENS) {
      if (++depth > limit) return i
    } else depth--
  }
  return -1
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/**
 * The offset of the quote that closes the string opened at `open` (the length when it is never
 * closed). Short strings (keys, most values) are read byte by byte; past 32 bytes the next quote
 * is found by the native search (large strings, base64 attachments above all, are most of a large
 * body), and a quote after an odd run of backslashes is escaped, so the scan goes on from there.
 */
function closingQuote(bytes: Buffer, open: number): number {
  const n = bytes.length
  let i = open + 1
  for (;;) {
    const stop = Math.min(n, i + 32)
    for (; i < stop; i++) {
      const c = bytes[i]!
      if (c === QUOTE) return i
      if (c === BACKSLASH) i++
    }
    if (i >= n) return n
    const at = bytes.indexOf(QUOTE, i)
    if (at < 0) return n
    let backslashes = 0
    while (bytes[at - 1 - backslashes] === BACKSLASH) backslashes++
    if ((backslashes & 1) === 0) return at
    i = at + 1
  }
}

type TextFrame = {
  isArray: boolean
  /** This container's token in its parent ('' for the root). */
  token: string
  depth: number
  limit: number
  scope: string
  /** Objects: the key of the value being read; arrays: the index. */
  key: string
  index: number
  expectKey: boolean
}

/**
 * `findTooDeep` on the raw text of a body: null when no container is nested past BODY_MAX_DEPTH
 * from the root (the narrower limits inside it are then checked on the parsed value, cheaply);
 * otherwise the first container past its limit, in document order, as findTooDeep would report it
 * on the parsed value: user_metadata's and input_schema's narrower limits and pointers included.
 * Linear in the bytes before that container; nothing is parsed but the keys on its path.
 */
export function findTooDeepInText(bytes: Uint8Array, where: Problem['in'] = 'body'): Problem | null {
  const end = firstTooDeepOffset(bytes, BODY_MAX_DEPTH)
  if (end < 0) return null
  return pointTooDeep(bytes, end, where)
}

/** The second pass, up to and including the container at `end`: tracks the path and each scope's limit. */
function pointTooDeep(bytes: Uint8Array, end: number, where: Problem['in']): Problem {
  const stack: TextFrame[] = []
  const text = asBuffer(bytes)
  for (let i = 0; i <= end; i++) {
    const c = text[i]!
    const top = stack[stack.length - 1]
    if (c === QUOTE) {
      const start = i
      i = closingQuote(text, i)
      if (top && !top.isArray && top.expectKey) top.key = decodeKey(text, start, i + 1)
    } else if (c === COLON) {
      if (top && !top.isArray) top.expectKey = false
    } else if (c === COMMA) {
      if (top?.isArray) top.index++
      else if (top) top.expectKey = true
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      const token = top === undefined ? '' : top.isArray ? String(top.index) : top.key
      const scope = top === undefined ? null : textScopeOf(stack, token)
      const depth = scope ? 1 : top === undefined ? 1 : top.depth + 1
      const limit = scope ? scope.limit : top === undefined ? BODY_MAX_DEPTH : top.limit
      const scopeName = scope ? scope.scope : top === undefined ? 'body' : top.scope
      const frame: TextFrame = { isArray: c === OPEN_ARRAY, token, depth, limit, scope: scopeName, key: '', index: 0, expectKey: c === OPEN_OBJECT }
      stack.push(frame)
      if (depth > limit) return tooDeepProblem(stack, where)
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      stack.pop()
    }
  }
  // The first pass found a container past the body's own limit, which is past every narrower one
  // too; text that makes the passes disagree (unbalanced brackets) is refused at the root.
  return { in: where, pointer: '', message: `is nested too deeply: the request body may nest at most ${BODY_MAX_DEPTH} levels of objects and arrays` }
}

function decodeKey(text: Buffer, start: number, end: number): string {
  const raw = text.toString('utf8', start, end)
  try {
    const key = JSON.parse(raw) as unknown
    return typeof key === 'string' ? key : raw
  } catch {
    return raw.slice(1, -1)
  }
}

/** scopeOf for a container about to open at `key` in the top frame of `stack`. */
function textScopeOf(stack: TextFrame[], key: string): { limit: number; scope: string } | null {
  const parent = stack[stack.length - 1]!
  if (parent.isArray) return null
  if (stack.length === 1 && key === 'user_metadata') return { limit: USER_METADATA_MAX_DEPTH, scope: 'user_metadata' }
  if (key === 'input_schema' && stack.length === 3) {
    const list = stack[1]!
    if (list.isArray && (list.token === 'definitions' || list.token === 'tools')) return { limit: INPUT_SCHEMA_MAX_DEPTH, scope: 'input_schema' }
  }
  return null
}

function tooDeepProblem(stack: TextFrame[], where: Problem['in']): Problem {
  const frame = stack[stack.length - 1]!
  const pointer = stack
    .slice(1)
    .map((f) => `/${escapeToken(f.token)}`)
    .join('')
  const what = frame.scope === 'body' ? 'the request body' : frame.scope
  return { in: where, pointer, message: `is nested too deeply: ${what} may nest at most ${frame.limit} levels of objects and arrays` }
}
