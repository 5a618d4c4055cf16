import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { randomUUID } from 'node:crypto'
import { createParser } from 'eventsource-parser'
import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, beforeEach, expect, vi } from 'vitest'
import type { CatalogueEntry } from '../../src/domain/catalogue/catalogue-entry.ts'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import type { LanguageModelFor } from '../../src/providers/language-models.ts'
import type { TurnRequest } from '../../src/domain/turns/submission.ts'
import { prepareSubmission } from '../../src/http/prepare-submission.ts'
import { createSandboxLanguageModel } from '../../src/providers/sandbox/sandbox-language-model.ts'
import type { Store } from '../../src/store/index.ts'
import { createChat, type Auth } from './http.ts'
import { createTestApp, type TestContext, type TestOrg } from './test-app.ts'
import { framesOf } from '../../src/actors/run-channel.ts'

export type SseFrame = { event: string; data: any }

/** The frames of a whole `text/event-stream` body, parsed by a real SSE parser (comments skipped). */
export function parseSse(body: string): SseFrame[] {
  const frames: SseFrame[] = []
  const parser = createParser({
    onEvent: (message) => {
      // Chat Completions end their stream with this sentinel, not JSON (decision 063).
      if (message.data === '[DONE]') return
      frames.push({ event: message.event ?? 'message', data: JSON.parse(message.data) })
    },
    onError: (error) => {
      throw error
    },
  })
  parser.feed(body)
  return frames
}

/** sandbox/echo and sandbox/echo-1m from the real catalogue file. */
export const sandboxCatalogue = (): CatalogueEntry[] => loadCatalogue().entries.filter((e) => e.provider === 'sandbox')

export const echo = (): CatalogueEntry => sandboxCatalogue().find((e) => e.name === 'sandbox/echo')!

/** A catalogue entry derived from sandbox/echo (still answered by the sandbox model unless `provider` says otherwise). */
export const variantOf = (name: string, id: string, over: Partial<CatalogueEntry> = {}): CatalogueEntry => ({ ...echo(), id, name, ...over })

/** An organisation with an API key and `amount` USD of credit. */
export function fundedOrg(ctx: TestContext, amount = '10'): TestOrg {
  const org = ctx.org()
  if (amount !== '0') ctx.store.balance.add(org.orgId, 'topup', amount)
  return org
}

/** What `useSandboxChat` gives each test: the file's app, and a fresh funded organisation and chat. */
export type SandboxChat = { readonly ctx: TestContext; readonly org: TestOrg; readonly chatId: string }

/**
 * The setup of an HTTP test file: one app for the file (building one per test was most of these
 * files' time), over the sandbox catalogue unless told; before each test a fresh organisation with
 * `credit` USD (its own balance and idempotency keys) and a new chat of it (`chat: false`: none).
 * Tests that compare rows compare before and after, which holds as well in the shared database.
 * Read the fields inside tests and hooks: they are set by the hooks this registers.
 */
export function useSandboxChat(options: Parameters<typeof createTestApp>[0] & { credit?: string; chat?: boolean } = {}): SandboxChat {
  const { credit = '10', chat = true, ...appOptions } = options
  let ctx: TestContext | undefined
  let org: TestOrg | undefined
  let chatId: string | undefined
  beforeAll(async () => {
    ctx = await createTestApp({ catalogue: sandboxCatalogue(), ...appOptions })
  })
  afterAll(async () => {
    await ctx?.close()
  })
  beforeEach(async () => {
    org = fundedOrg(ctx!, credit)
    chatId = chat ? await newChat(ctx!, org.auth) : undefined
  })
  const set = <T>(value: T | undefined, name: string): T => {
    if (value === undefined) throw new Error(`useSandboxChat: ${name} is set by its hooks; read it inside a test or hook`)
    return value
  }
  return {
    get ctx() {
      return set(ctx, 'ctx')
    },
    get org() {
      return set(org, 'org')
    },
    get chatId() {
      return set(chatId, 'chatId (chat: false makes none)')
    },
  }
}

export async function newChat(ctx: TestContext, auth: Auth, body: Record<string, unknown> = {}): Promise<string> {
  return (await createChat(ctx.app, auth, body)).id
}

export const prompt = (text: string, extra: Record<string, unknown> = {}) => ({ type: 'prompt', text, ...extra })

export function postTurn(ctx: TestContext, auth: Auth, chatId: string, body: Record<string, unknown>) {
  return ctx.app.inject({ method: 'POST', url: `/api/v1/chats/${chatId}/responses`, headers: auth, payload: body })
}

export type Turn = { res: LightMyRequestResponse; frames: SseFrame[]; runId: string; events: string[]; of: (event: string) => SseFrame[] }

/** Submits a turn that must open a stream (HTTP 200), and parses it. */
export async function turn(ctx: TestContext, auth: Auth, chatId: string, body: Record<string, unknown>): Promise<Turn> {
  const res = await postTurn(ctx, auth, chatId, { model: 'sandbox/echo', ...body })
  return streamOf(res)
}

export function streamOf(res: LightMyRequestResponse): Turn {
  expect(res.statusCode, res.body).toBe(200)
  expect(res.headers['content-type']).toMatch(/^text\/event-stream/)
  const frames = parseSse(res.body)
  expect(frames[0]?.event).toBe('run')
  return {
    res,
    frames,
    runId: frames[0]!.data.run_id,
    events: frames.map((f) => f.event),
    of: (event) => frames.filter((f) => f.event === event),
  }
}

/** Waits until the run streaming on this node has relayed a frame of `event` (nothing is cancelled before it). */
export async function waitForFrame(ctx: TestContext, chatId: string, runId: string, event: string, times = 1): Promise<void> {
  await vi.waitFor(
    () => {
      const channel = ctx.host.channelOf(chatId, runId)
      const seen = channel ? framesOf(channel).filter((f) => f.event === event).length : 0
      expect(seen).toBeGreaterThanOrEqual(times)
    },
    { timeout: 5_000 },
  )
}

/** Concatenated delta text of one kind. */
export const deltaText = (frames: SseFrame[], kind: string) =>
  frames.filter((f) => f.event === 'delta' && f.data.kind === kind).map((f) => f.data.text as string).join('')

export async function history(ctx: TestContext, auth: Auth, chatId: string, query = '') {
  const res = await ctx.app.inject({ url: `/api/v1/chats/${chatId}/history${query}`, headers: auth })
  expect(res.statusCode, res.body).toBe(200)
  return res.json() as { data: any[]; first_ordinal: number | null; last_ordinal: number | null; has_more: boolean }
}

export async function getRun(ctx: TestContext, auth: Auth, runId: string) {
  const res = await ctx.app.inject({ url: `/api/v1/runs/${runId}`, headers: auth })
  expect(res.statusCode, res.body).toBe(200)
  return res.json()
}

/** Rows of a chat straight from the database. */
export function countOf(store: Store, table: 'runs' | 'parts', chatId: string): number {
  return (store.db.prepare(`SELECT count(*) AS n FROM ${table} WHERE chat_id = ?`).get(chatId) as { n: number }).n
}

export function totalRows(store: Store, table: 'runs' | 'parts' | 'balance_entries' | 'idempotency_keys' | 'part_media' | 'media_blobs'): number {
  return (store.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n
}

/** Everything a rejected turn must leave untouched. */
export function snapshotRows(store: Store) {
  return {
    runs: totalRows(store, 'runs'),
    parts: totalRows(store, 'parts'),
    balance_entries: totalRows(store, 'balance_entries'),
    idempotency_keys: totalRows(store, 'idempotency_keys'),
    part_media: totalRows(store, 'part_media'),
    media_blobs: totalRows(store, 'media_blobs'),
  }
}

export function usageEntries(store: Store, runId: string): { entry_type: string; amount_units: number }[] {
  return store.db.prepare('SELECT entry_type, amount_units FROM balance_entries WHERE run_id = ?').all(runId) as never
}

/**
 * A fake provider model: `script` writes the stream. It gets the controller and the call options
 * (with the abort signal); writes after the stream was cancelled are ignored.
 */
export function scriptedModel(
  script: (emit: (part: LanguageModelV4StreamPart) => void, options: LanguageModelV4CallOptions) => Promise<void>,
  /** The response's headers, as a vendor's (its request id header, say). */
  headers: Record<string, string> = {},
): LanguageModelV4 {
  return {
    specificationVersion: 'v4',
    provider: 'fake',
    modelId: 'fake',
    supportedUrls: {},
    async doGenerate() {
      throw new Error('streams only')
    },
    async doStream(options) {
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        async start(controller) {
          let open = true
          const emit = (part: LanguageModelV4StreamPart) => {
            if (!open) return
            try {
              controller.enqueue(part)
            } catch {
              open = false
            }
          }
          await script(emit, options)
          if (open) {
            try {
              controller.close()
            } catch {
              // cancelled meanwhile
            }
          }
        },
      })
      return { stream, response: { headers } }
    },
  }
}

/** The limits a sandbox model holds a catalogue entry's requests to: its window and input limit. */
export const sandboxLimitsOf = (entry: { context_window?: number; max_input_tokens?: number | null }) =>
  entry.context_window === undefined ? undefined : { contextWindow: entry.context_window, maxInputTokens: entry.max_input_tokens ?? null }

/** The sandbox for sandbox entries, the given fakes by vendor_model_id for provider `fake`. */
export function withFakes(fakes: Record<string, LanguageModelV4>): LanguageModelFor {
  // One sandbox model per id, as the app makes them: each holds its simulated prefix cache.
  const sandbox = new Map<string, LanguageModelV4>()
  return (entry) => {
    if (entry.provider === 'fake') {
      const model = fakes[entry.vendor_model_id]
      if (!model) throw new Error(`no fake model ${entry.vendor_model_id}`)
      return model
    }
    // Held to its entry's window, as the app's sandbox is (a variant with another window is another model).
    const key = `${entry.vendor_model_id}@${entry.context_window}`
    let model = sandbox.get(key)
    if (!model) sandbox.set(key, (model = createSandboxLanguageModel(entry.vendor_model_id, sandboxLimitsOf(entry))))
    return model
  }
}

export const untilAborted = (signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    if (!signal || signal.aborted) return resolve()
    signal.addEventListener('abort', () => resolve(), { once: true })
  })

export function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

const FINISH_USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
}

/** Stream parts for one complete tool call. */
export function toolCallParts(id: string, toolName: string, args: string): LanguageModelV4StreamPart[] {
  return [
    { type: 'tool-input-start', id, toolName },
    { type: 'tool-input-delta', id, delta: args },
    { type: 'tool-input-end', id },
    { type: 'tool-call', toolCallId: id, toolName, input: args },
  ]
}

export function finishPart(unified: 'stop' | 'tool-calls' | 'length' = 'stop'): LanguageModelV4StreamPart {
  return { type: 'finish', finishReason: { unified, raw: unified }, usage: FINISH_USAGE }
}

/** A 1×1 transparent PNG. */
export const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
)

type RunRow = Parameters<Store['runs']['insert']>[0]

/**
 * A run row as admission writes it, for tests that start from a state of the ledger: by default a
 * customer run of sandbox/echo created now, leased for 30 s to `node`. Returns its id.
 */
export function insertRun(store: Store, row: Pick<RunRow, 'org_id' | 'chat_id'> & Partial<RunRow>): string {
  const id = row.id ?? randomUUID()
  store.runs.insert({
    origin: 'customer',
    model_id: echo().id,
    model_name: echo().name,
    namespace: null,
    api_key_id: null,
    retry_of: null,
    created_at: new Date().toISOString(),
    lease_owner: 'node',
    lease_expires_at: new Date(Date.now() + 30_000).toISOString(),
    manifest: {},
    ...row,
    id,
  })
  return id
}

/** A turn as the HTTP layer prepares it (a prompt "hello" unless told), for tests that drive the actor host directly. */
export function prepareTurn(orgId: string, chatId: string, request: Partial<TurnRequest> = {}, model: CatalogueEntry = echo()) {
  return prepareSubmission({ model: model.name, input: [{ type: 'prompt', text: 'hello' }], ...request }, model, { orgId, apiKeyId: null, chatId, namespace: null }).submission
}
