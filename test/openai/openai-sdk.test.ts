import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestContext, type TestOrg } from '../helpers/test-app.ts'
import { sandboxCatalogue } from '../helpers/turns.ts'

/**
 * The official `openai` SDK against a real Parley server, with only `baseURL` and `apiKey` changed
 * (issue 35, docs/guide/openai-sdk.md): what it sends is a native turn, billed and recorded as one.
 */
let ctx: TestContext
let org: TestOrg
let sdk: OpenAI
let port: number

beforeAll(async () => {
  ctx = await createTestApp({ catalogue: sandboxCatalogue() })
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  port = (ctx.app.server.address() as { port: number }).port
  org = ctx.org()
  ctx.store.balance.add(org.orgId, 'topup', '10')
  sdk = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: org.key, maxRetries: 0 })
})
afterAll(async () => {
  await ctx?.close()
})

const native = async (path: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${org.key}` } })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

describe('the openai SDK against Parley', () => {
  it('a non-streaming response: the sandbox echoes, and the run is a native run, billed', async () => {
    const response = await sdk.responses.create({ model: 'sandbox/echo', input: 'hello there' })
    expect(response.status).toBe('completed')
    expect(response.output_text).toBe('echo: hello there')
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' })
    expect(response.usage?.input_tokens).toBeGreaterThan(0)
    const runId = response.id.slice('resp_'.length).replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5')
    const run = await native(`/api/v1/runs/${runId}`)
    expect(run.status).toBe(200)
    expect(run.body.status).toBe('succeeded')
    expect(Number(run.body.cost)).toBeGreaterThan(0)
  })

  it('streams the Responses event sequence, ending with response.completed', async () => {
    const stream = await sdk.responses.create({ model: 'sandbox/echo', input: 'count to three', stream: true })
    const types: string[] = []
    let text = ''
    let completed: OpenAI.Responses.Response | null = null
    for await (const event of stream) {
      types.push(event.type)
      if (event.type === 'response.output_text.delta') text += event.delta
      if (event.type === 'response.completed') completed = event.response
    }
    expect(types[0]).toBe('response.created')
    expect(types[1]).toBe('response.in_progress')
    expect(types).toContain('response.output_item.added')
    expect(types.at(-1)).toBe('response.completed')
    expect(text).toBe('echo: count to three')
    expect(completed?.output_text).toBe(text)
  })
})
