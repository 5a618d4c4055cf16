import { afterAll, beforeAll, expect, test } from 'vitest'
import { isTurnEventName } from '../../clients/typescript/src/turn-events.ts'
import { RUN_EVENT_NAMES } from '../../src/http/schemas/events.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'

/**
 * The client writes out each event's data schema (clients/typescript/src/turn-events.ts), since
 * the document gives that map as `x-sse-events`, which no generator reads (decision 036): its names
 * must be the document's, each way.
 */

let ctx: TestContext
let events: Record<string, string>

beforeAll(async () => {
  ctx = await createTestApp()
  const doc = (await ctx.app.inject({ url: '/openapi.json' })).json()
  events = doc.paths['/api/v1/chats/{chat_id}/responses'].post.responses['200'].content['text/event-stream']['x-sse-events']
})
afterAll(async () => {
  await ctx.close()
})

test("the client knows every event of the document's x-sse-events, and no other", () => {
  expect(Object.keys(events).sort()).toEqual([...RUN_EVENT_NAMES].sort())
  for (const name of Object.keys(events)) expect(isTurnEventName(name), name).toBe(true)
  for (const name of ['message', 'progress', 'RunEvent', '']) expect(isTurnEventName(name), name).toBe(false)
})
