import { expect } from 'vitest'
import type { TestContext } from './test-app.ts'
import { parseSse } from './turns.ts'

type Init = { method?: string; body?: unknown }

/**
 * The HTTP API of an app in process, through inject, as one organisation: `ctx` and `auth` are read
 * at each call (a file sets them in `beforeAll`).
 */
export function injectApi(ctx: () => TestContext, auth: () => { authorization: string }) {
  const api = async (path: string, init: Init = {}) => {
    const res = await ctx().app.inject({
      method: (init.method ?? 'GET') as 'GET',
      url: path,
      headers: auth(),
      ...(init.body === undefined ? {} : { payload: init.body as object }),
    })
    return { status: res.statusCode, text: res.body, json: () => res.json() }
  }
  /** POSTs a turn: a 200 answer is an event stream, read whole (the app ended it); any other is read as is. */
  const postTurn = async (chatId: string, body: Record<string, unknown>) => {
    const res = await ctx().app.inject({ method: 'POST', url: `/api/v1/chats/${chatId}/responses`, headers: auth(), payload: body })
    if (res.statusCode !== 200) return { ok: false as const, status: res.statusCode, text: res.body }
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/)
    return { ok: true as const, frames: parseSse(res.body) }
  }
  /** The JSON of an answer that must have `status`. */
  const ok = async (path: string, init: Init = {}, status = 200) => {
    const res = await api(path, init)
    expect(res.status, `${init.method ?? 'GET'} ${path}: ${res.text}`).toBe(status)
    return res.json()
  }
  return { api, postTurn, ok }
}
