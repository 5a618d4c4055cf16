import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import { createLanguageModels } from '../../src/providers/language-models.ts'
import { bootstrapDevOrganisation } from '../../src/store/bootstrap-dev-organisation.ts'
import type { Vendor } from '../e2e/vendor-fixtures/index.ts'
import { startReplayServer, type ReplayServer } from '../e2e/vendor-replay-server.ts'
import { fileOf } from '../helpers/sized-files.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'

/**
 * Issue 11 (moved from test/e2e/large-attachments.test.ts, where the accepted sizes and the timed
 * 20 MiB turn stay): one byte over the chosen model's `max_bytes_per_attachment` answers 422 in the
 * error envelope with a pointer and writes nothing, and no vendor is called. The app in process,
 * configured as the server process was (SANDBOX=on; Anthropic, xAI and OpenAI keyed, their base
 * URLs on a loopback replay server; the dev organisation bootstrapped).
 */

const MiB = 1024 * 1024

const KEYS: Partial<Record<Vendor, string>> = { anthropic: 'sk-ant-api03-replay-anthropic-key', xai: 'xai-replay-key', openai: 'sk-proj-replay-openai-key' }
const KEY_VARIABLES: Partial<Record<Vendor, string>> = { anthropic: 'ANTHROPIC_API_KEY', xai: 'XAI_API_KEY', openai: 'OPENAI_API_KEY' }

/** One byte over each chosen model's limit (5, 10 and 20 MiB). */
const OVER: { model: string; mime: string; limit: number }[] = [
  { model: 'anthropic/claude-haiku-4.5', mime: 'image/png', limit: 5 * MiB },
  { model: 'xai/grok-4.3', mime: 'image/png', limit: 10 * MiB },
  { model: 'sandbox/echo', mime: 'application/pdf', limit: 20 * MiB },
]

const TABLES = ['chats', 'runs', 'parts', 'part_media', 'media_blobs', 'idempotency_keys', 'balance_entries', 'provider_calls'] as const

describe('attachments over the model’s limit (issue 11)', () => {
  let replay: ReplayServer
  let ctx: TestContext
  let auth = { authorization: '' }

  const api = async (path: string, init: { method?: 'GET' | 'POST'; body?: unknown } = {}) => {
    const res = await ctx.app.inject({ method: init.method ?? 'GET', url: path, headers: auth, ...(init.body === undefined ? {} : { payload: init.body as object }) })
    return { status: res.statusCode, text: res.body, json: () => res.json() }
  }

  const newChat = async (): Promise<string> => {
    const res = await api('/api/v1/chats', { method: 'POST', body: {} })
    expect(res.status, res.text).toBe(201)
    return res.json().id
  }

  const rowCounts = () => Object.fromEntries(TABLES.map((t) => [t, (ctx.store.db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n]))

  /** POSTs an already serialised turn body. */
  const postRaw = async (chatId: string, body: string) => {
    const res = await ctx.app.inject({ method: 'POST', url: `/api/v1/chats/${chatId}/responses`, headers: { ...auth, 'content-type': 'application/json' }, payload: body })
    return { status: res.statusCode, text: res.body }
  }

  const turnBody = (model: string, mime: string, bytes: Buffer, text: string) =>
    JSON.stringify({ model, input: [{ type: 'prompt', text, media: [{ mime, data_base64: bytes.toString('base64'), filename: `big.${mime === 'application/pdf' ? 'pdf' : 'png'}` }] }] })

  beforeAll(async () => {
    replay = await startReplayServer()
    const env: Record<string, string> = {}
    for (const vendor of Object.keys(KEYS) as Vendor[]) {
      env[KEY_VARIABLES[vendor]!] = KEYS[vendor]!
      env[`${vendor.toUpperCase()}_BASE_URL`] = replay.baseUrl(vendor)
    }
    const catalogue = loadCatalogue().entries.filter((e) => ['sandbox', ...Object.keys(KEYS)].includes(e.provider))
    ctx = await createTestApp({ catalogue, languageModelFor: createLanguageModels(env) })
    auth = { authorization: `Bearer ${bootstrapDevOrganisation(ctx.store)!.key}` }
  })

  afterAll(async () => {
    await ctx?.close()
    await replay?.close()
  })

  test.each(OVER)('one byte over $model\'s $limit bytes: 422 with a pointer, nothing written', async (o) => {
    const chatId = await newChat()
    const before = rowCounts()
    const vendorCalls = replay.requests.length
    const answer = await postRaw(chatId, turnBody(o.model, o.mime, fileOf(o.mime, o.limit + 1), 'one byte too many'))
    expect(answer.status, answer.text).toBe(422)
    const error = JSON.parse(answer.text).error
    expect(error.code).toBe('unsupported_attachment')
    expect(error.message).toContain(String(o.limit))
    expect(error.details.problems).toEqual([{ in: 'body', pointer: '/input/0/media/0/data_base64', message: expect.stringContaining(`${o.limit + 1} bytes`) }])
    expect(rowCounts()).toEqual(before)
    expect(replay.requests.length).toBe(vendorCalls)
    const history = await api(`/api/v1/chats/${chatId}/history`)
    expect(history.json().data).toEqual([])
  })
})
