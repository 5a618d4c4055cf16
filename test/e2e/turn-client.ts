import Database from 'better-sqlite3'
import { createParser } from 'eventsource-parser'

/**
 * A client of the turn endpoint over real HTTP (undici's fetch), reading the event stream as it
 * arrives. Frames are parsed by eventsource-parser; each remembers which network read completed
 * it, so a test can tell frames that arrived separately from frames that arrived together.
 */

export type SseFrame = { event: string; data: any; read: number }

export type HttpAnswer = { status: number; headers: Headers; text: string; json: () => any }

export type TurnStream = {
  status: 200
  headers: Headers
  /** Every frame so far, in arrival order. */
  frames: SseFrame[]
  /** How the body ended: the server closed it, we aborted it, or the connection broke. */
  closed: Promise<'end' | 'aborted' | 'broken'>
  isClosed: () => boolean
  /** Resolves with the first frame (already received or still to come) matching `match`. */
  frame: (what: string, match: (f: SseFrame) => boolean, timeoutMs?: number) => Promise<SseFrame>
  /** Drops the connection (the run goes on: spec §4.2 rule 2). */
  abort: () => void
}

export type TurnAnswer = ({ ok: true } & TurnStream) | ({ ok: false } & HttpAnswer)

const answerOf = async (response: Response): Promise<HttpAnswer> => {
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) }
}

/** A JSON request with a bearer key, bounded by `timeoutMs`. */
export async function request(
  baseUrl: string,
  path: string,
  init: { method?: string; key?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  const headers = new Headers()
  if (init.key) headers.set('authorization', `Bearer ${init.key}`)
  if (init.body !== undefined) headers.set('content-type', 'application/json')
  const response = await fetch(`${baseUrl}${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: AbortSignal.timeout(init.timeoutMs ?? 10_000),
  })
  return answerOf(response)
}

/**
 * POSTs a turn. A non-200 answer is read whole; a 200 answer is returned at once with its frames
 * filling in as they arrive. `timeoutMs` bounds the whole stream.
 */
export async function postTurn(baseUrl: string, key: string, chatId: string, body: unknown, timeoutMs = 30_000): Promise<TurnAnswer> {
  const controller = new AbortController()
  const deadline = setTimeout(() => controller.abort(new Error(`turn stream still open after ${timeoutMs} ms`)), timeoutMs)
  let response: Response
  try {
    response = await fetch(`${baseUrl}/api/v1/chats/${chatId}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: controller.signal,
    })
  } catch (error) {
    clearTimeout(deadline)
    throw error
  }
  if (response.status !== 200) {
    clearTimeout(deadline)
    return { ok: false, ...(await answerOf(response)) }
  }

  const frames: SseFrame[] = []
  const listeners = new Set<() => void>()
  let read = 0
  let closedAs: 'end' | 'aborted' | 'broken' | null = null
  let abortedByUs = false
  const parser = createParser({
    onEvent: (message) => {
      frames.push({ event: message.event ?? 'message', data: JSON.parse(message.data), read })
      for (const listener of listeners) listener()
    },
    onError: (error) => {
      throw error
    },
  })

  const closed = (async () => {
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        read++
        parser.feed(decoder.decode(value, { stream: true }))
      }
      closedAs = 'end'
    } catch {
      closedAs = abortedByUs ? 'aborted' : 'broken'
    } finally {
      clearTimeout(deadline)
      for (const listener of listeners) listener()
    }
    return closedAs
  })()

  const frame = (what: string, match: (f: SseFrame) => boolean, timeoutMs = 10_000) =>
    new Promise<SseFrame>((resolve, reject) => {
      const check = () => {
        const found = frames.find(match)
        if (found) return done(() => resolve(found))
        if (closedAs !== null) return done(() => reject(new Error(`stream ${closedAs} without ${what}; got ${frames.map((f) => f.event).join(',')}`)))
      }
      const timer = setTimeout(() => done(() => reject(new Error(`no ${what} within ${timeoutMs} ms`))), timeoutMs)
      const done = (settle: () => void) => {
        clearTimeout(timer)
        listeners.delete(check)
        settle()
      }
      listeners.add(check)
      check()
    })

  return {
    ok: true,
    status: 200,
    headers: response.headers,
    frames,
    closed,
    isClosed: () => closedAs !== null,
    frame,
    abort: () => {
      abortedByUs = true
      controller.abort()
    },
  }
}

/** Concatenated delta text of one kind. */
export const deltaText = (frames: SseFrame[], kind: string) =>
  frames.filter((f) => f.event === 'delta' && f.data.kind === kind).map((f) => f.data.text as string).join('')

export type StreamedBlock = { kind: string; text: string; tool_name?: string; tool_use_id?: string }

/** The blocks whose block_stop was received, with the text their deltas carried. */
export function completedBlocks(frames: SseFrame[]): StreamedBlock[] {
  const done: StreamedBlock[] = []
  let open: StreamedBlock | null = null
  for (const f of frames) {
    if (f.event === 'block_start') open = { ...f.data, text: '' }
    else if (f.event === 'delta' && open) open.text += f.data.text
    else if (f.event === 'block_stop' && open) {
      done.push(open)
      open = null
    }
  }
  return done
}

/** Runs `read` on a read-only connection to the server's database file and closes it. */
export function readDatabase<T>(file: string, read: (db: Database.Database) => T): T {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    db.pragma('busy_timeout = 5000')
    return read(db)
  } finally {
    db.close()
  }
}

/** Money as integer 10^-10 units (the store's scale), for exact sums. */
export function moneyUnits(amount: string): bigint {
  const match = /^([+-]?)(\d+)(?:\.(\d{1,10}))?$/.exec(amount)
  if (!match) throw new Error(`not a money amount: ${amount}`)
  const units = BigInt(match[2]!) * 10n ** 10n + BigInt((match[3] ?? '').padEnd(10, '0'))
  return match[1] === '-' ? -units : units
}
