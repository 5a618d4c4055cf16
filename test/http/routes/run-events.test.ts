import { randomUUID } from 'node:crypto'
import { beforeEach, describe, expect, it } from 'vitest'
import { expectError } from '../../helpers/http.ts'
import type { TestContext, TestOrg } from '../../helpers/test-app.ts'
import { fundedOrg, parseSse, prompt, turn, useSandboxChat } from '../../helpers/turns.ts'

// One app for the file, a fresh funded organisation and chat for each test (test/helpers/turns.ts).
const sandbox = useSandboxChat()
let ctx: TestContext
let org: TestOrg
let chatId: string
beforeEach(() => {
  ;({ ctx, org, chatId } = sandbox)
})

describe('GET /api/v1/runs/{run_id}/events: isolation (decision 038)', () => {
  it('answers another organisation’s run with the body of a missing run, whatever event id it is sent, and streams nothing', async () => {
    const t = await turn(ctx, org.auth, chatId, { input: [prompt('a secret answer')] })
    // The owner reads it: the route serves this run, so the 404s below are the isolation's.
    const own = await ctx.app.inject({ url: `/api/v1/runs/${t.runId}/events`, headers: org.auth })
    expect(own.statusCode, own.body).toBe(200)
    expect(parseSse(own.body).at(-1)!.event).toBe('done')

    const other = fundedOrg(ctx)
    const missingId = randomUUID()
    // With no event id, with a valid one of the run (header and query), and with a malformed one:
    // the lookup answers before the id is read, so none of them tells the run exists.
    const asks = [
      { headers: {}, query: '' },
      { headers: { 'last-event-id': (id: string) => `${id}:1` }, query: '' },
      { headers: {}, query: (id: string) => `?after=${encodeURIComponent(`${id}:10000000000`)}` },
      { headers: { 'last-event-id': () => 'not an id' }, query: '' },
    ]
    for (const ask of asks) {
      const send = (id: string) =>
        ctx.app.inject({
          url: `/api/v1/runs/${id}/events${typeof ask.query === 'function' ? ask.query(id) : ask.query}`,
          headers: { ...other.auth, ...Object.fromEntries(Object.entries(ask.headers).map(([name, value]) => [name, value(id)])) },
        })
      const theirs = await send(t.runId)
      const missing = await send(missingId)
      expectError(theirs, 404, 'not_found')
      expectError(missing, 404, 'not_found')
      expect(theirs.headers['content-type']).toBe(missing.headers['content-type'])
      expect(theirs.body.replaceAll(t.runId, '<id>')).toBe(missing.body.replaceAll(missingId, '<id>'))
      expect(theirs.body).not.toContain('a secret answer')
      expect(theirs.body).not.toContain(chatId)
    }
  })
})
