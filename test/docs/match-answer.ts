import { createParser } from 'eventsource-parser'
/**
 * Whether what an example printed is what its page says it answers. A page shows the fields that
 * matter, not every field: an object matches when each key it shows matches (others may be there),
 * an array when it has as many items and each matches, a string `<like this>` matches any value,
 * and anything else must be equal.
 */
export function jsonMismatches(expected: unknown, actual: unknown, at = ''): string[] {
  if (typeof expected === 'string' && /^<[^<>]*>$/.test(expected)) {
    return actual === undefined ? [`${at || '/'}: missing (the page shows ${expected})`] : []
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${at || '/'}: expected an array, got ${JSON.stringify(actual)}`]
    if (actual.length !== expected.length) return [`${at || '/'}: expected ${expected.length} items, got ${actual.length}: ${JSON.stringify(actual)}`]
    return expected.flatMap((item, i) => jsonMismatches(item, actual[i], `${at}/${i}`))
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return [`${at || '/'}: expected an object, got ${JSON.stringify(actual)}`]
    return Object.entries(expected).flatMap(([key, value]) => jsonMismatches(value, (actual as Record<string, unknown>)[key], `${at}/${key}`))
  }
  return Object.is(expected, actual) ? [] : [`${at || '/'}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`]
}

export type Frame = { event: string; data: unknown }

/** The frames of a server-sent event stream as curl prints it (eventsource-parser reads it); comments (heartbeats) carry no event. */
export function parseFrames(text: string): Frame[] {
  const frames: Frame[] = []
  const parser = createParser({ onEvent: (e) => frames.push({ event: e.event ?? 'message', data: e.data === '' ? null : JSON.parse(e.data) }) })
  parser.feed(text.endsWith('\n\n') ? text : `${text}\n\n`)
  return frames
}

/** A page's stream: one frame a line, `event: NAME` then (optionally) the data it shows; `…` stands for any frames. */
type ShownFrame = { any: true } | { any: false; event: string; data: unknown; line: string }

function parseShownFrames(shown: string): ShownFrame[] {
  return shown
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line): ShownFrame => {
      if (line === '…' || line === '...') return { any: true }
      const match = /^event: (\S+)\s*(.*)$/.exec(line)
      if (!match) throw new Error(`a stream answer line must be "event: NAME DATA" or "…": ${line}`)
      return { any: false, event: match[1]!, data: match[2] === '' ? undefined : JSON.parse(match[2]!), line }
    })
}

/** Empty when the frames are the ones shown, in that order; otherwise why not. */
export function streamMismatches(shown: string, frames: Frame[]): string[] {
  const expected = parseShownFrames(shown)
  const known = new Map<string, boolean>()
  const fits = (e: number, f: number): boolean => {
    const key = `${e},${f}`
    if (!known.has(key)) known.set(key, decide(e, f))
    return known.get(key)!
  }
  const decide = (e: number, f: number): boolean => {
    if (e === expected.length) return f === frames.length
    const item = expected[e]!
    if (item.any) return fits(e + 1, f) || (f < frames.length && fits(e, f + 1))
    const frame = frames[f]
    if (!frame || frame.event !== item.event) return false
    if (item.data !== undefined && jsonMismatches(item.data, frame.data).length > 0) return false
    return fits(e + 1, f + 1)
  }
  if (fits(0, 0)) return []
  const got = frames.map((f) => `event: ${f.event} ${JSON.stringify(f.data)}`).join('\n')
  return [`the stream does not match the page.\nThe page shows:\n${shown}\nThe server sent:\n${got}`]
}
