import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import { inactiveModelHint } from '../../src/providers/catalogue/inactive-model.ts'
import { countRows, createChat, expectProblem } from '../helpers/http.ts'
import { listeningTestApp, type TestContext } from '../helpers/test-app.ts'

/**
 * Issue 38, a first run that explains itself (decision 060): a node serving OpenAI's models and not
 * the sandbox is sent a turn naming `sandbox/echo`. The native API's 422 keeps its message and
 * carries a hint naming the active models and how the sandbox is turned on; the OpenAI facade's 400
 * carries the same hint in its message, OpenAI's error having no field for it, so the `openai`
 * SDK's error shows it.
 */
const OPENAI_MODELS = loadCatalogue().entries.filter((entry) => entry.provider === 'openai' && entry.status !== 'retired')
const MESSAGE = '"sandbox/echo" is not an active model of the catalogue'
const HINT = inactiveModelHint('sandbox/echo', OPENAI_MODELS)

let ctx: TestContext & { port: number; authorization: string }
const auth = () => ({ authorization: ctx.authorization })

beforeAll(async () => {
  ctx = await listeningTestApp({ catalogue: OPENAI_MODELS })
})
afterAll(async () => {
  await ctx.close()
})

describe('a turn naming a model this node does not serve', () => {
  it('the hint names every active model and how to turn the sandbox on', () => {
    expect(OPENAI_MODELS.length).toBeGreaterThan(0)
    for (const model of OPENAI_MODELS) expect(HINT).toContain(model.name)
    expect(HINT).toContain('SANDBOX=on')
    expect(HINT).toContain('docs/guide/vendors.md')
  })

  it('native API: 422 validation_failed on /model, the same message as before, and the hint; nothing written', async () => {
    const chat = await createChat(ctx.app, auth())
    const res = await ctx.app.inject({
      method: 'POST',
      url: `/api/v1/chats/${chat.id}/responses`,
      headers: auth(),
      payload: { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hello' }] },
    })
    const problems = expectProblem(res, 'body', '/model')
    expect(problems).toEqual([{ in: 'body', pointer: '/model', message: MESSAGE }])
    expect(res.json().error).toEqual({ code: 'validation_failed', message: `body /model: ${MESSAGE}`, details: { problems }, hint: HINT })
    expect(countRows(ctx.store, 'parts')).toBe(0)
  })

  it('OpenAI facade: POST /v1/responses, /v1/responses/input_tokens and /v1/responses/compact answer 400 in OpenAI’s shape, the hint in the message', async () => {
    for (const url of ['/v1/responses', '/v1/responses/input_tokens', '/v1/responses/compact']) {
      const res = await ctx.app.inject({ method: 'POST', url, headers: auth(), payload: { model: 'sandbox/echo', input: 'hello' } })
      expect(res.statusCode, `${url}: ${res.body}`).toBe(400)
      expect(res.json(), url).toEqual({
        error: { message: `body /model: ${MESSAGE}; ${HINT}`, type: 'invalid_request_error', param: 'model', code: 'invalid_value' },
      })
    }
    expect(countRows(ctx.store, 'parts')).toBe(0)
  })

  it('the openai SDK’s error shows the hint', async () => {
    const sdk = new OpenAI({ baseURL: `http://127.0.0.1:${ctx.port}/v1`, apiKey: ctx.authorization.slice('Bearer '.length), maxRetries: 0 })
    const error = await sdk.responses.create({ model: 'sandbox/echo', input: 'hello' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain(HINT)
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('model')
  })
})
