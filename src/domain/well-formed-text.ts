import type { Problem } from './errors.ts'
import { escapeToken } from './json-pointer.ts'

/*
 * docs/decisions/031-well-formed-text.md: every string of a request body is stored as UTF-8, and a
 * lone surrogate (a UTF-16 unit 0xD800-0xDFFF without its pair) has no UTF-8 form: SQLite would
 * store it as U+FFFD and read back something else. Such a string is refused at its pointer, before
 * schema validation, so a length limit counts exactly the characters that will be stored.
 */

/** The native check (Node 20+, ES2024), typed here because the project's lib is ES2022. */
const isWellFormed = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed()

/** At most this many problems are listed: one is enough to act on, and a body may hold millions of strings. */
export const MAX_TEXT_PROBLEMS = 20

type Frame = { value: unknown; pointer: string }

/**
 * Problems for the strings and property names of `body` that are not well-formed UTF-16 (hold a
 * lone surrogate), in document order; [] when every one is. Iterative, and linear in the body: each
 * string is checked once, natively. A bad string is reported at its own pointer; a bad property
 * name at the object that holds it (the name itself could not be written into a pointer).
 */
export function findIllFormedText(body: unknown, where: Problem['in'] = 'body'): Problem[] {
  // Almost every body is well-formed: seen so first, writing no pointer (a pointer for each of a
  // 2,000-tool bundle's 68,000 values cost most of this check, issue 36).
  if (isAllWellFormed(body)) return []
  const problems: Problem[] = []
  const stack: Frame[] = [{ value: body, pointer: '' }]
  while (stack.length > 0 && problems.length < MAX_TEXT_PROBLEMS) {
    const { value, pointer } = stack.pop()!
    if (typeof value === 'string') {
      if (!isWellFormed(value)) problems.push({ in: where, pointer, message: LONE_SURROGATE })
      continue
    }
    if (value === null || typeof value !== 'object') continue
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        const item: unknown = value[i]
        if (typeof item === 'string' || (item !== null && typeof item === 'object')) stack.push({ value: item, pointer: `${pointer}/${i}` })
      }
      continue
    }
    const keys = Object.keys(value)
    const children: Frame[] = []
    let badName = false
    for (const key of keys) {
      if (!isWellFormed(key)) {
        badName = true
        continue
      }
      const child: unknown = (value as Record<string, unknown>)[key]
      if (typeof child === 'string' || (child !== null && typeof child === 'object')) children.push({ value: child, pointer: `${pointer}/${escapeToken(key)}` })
    }
    if (badName) problems.push({ in: where, pointer, message: LONE_SURROGATE_NAME })
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!)
  }
  return problems
}

/** Whether every string and property name in `value` is well-formed: the walk of findIllFormedText, without pointers. */
function isAllWellFormed(value: unknown): boolean {
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === 'string') {
      if (!isWellFormed(v)) return false
      continue
    }
    if (v === null || typeof v !== 'object') continue
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push(v[i])
      continue
    }
    for (const key of Object.keys(v)) {
      if (!isWellFormed(key)) return false
      stack.push((v as Record<string, unknown>)[key])
    }
  }
  return true
}

const LONE_SURROGATE =
  'is not well-formed text: it holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which has no UTF-8 form; send each character outside the BMP as its surrogate pair'
const LONE_SURROGATE_NAME =
  'has a property name that is not well-formed text: it holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which has no UTF-8 form'
