import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { DEFAULT_BODY_LIMIT } from '../../src/http/app.ts'
import { unbrokenLetters } from '../helpers/hostile-requests.ts'
import { startServer, type ServerProcess } from './server-process.ts'
import { postTurn, request, type SseFrame } from './turn-client.ts'
import { machineCeiling } from '../helpers/machine-timeouts.ts'

/**
 * Issue 11: a request carrying 1 MiB of unbroken text (the costliest text for the tokenizer:
 * random lowercase letters, about 4 s of exact BPE a MiB) never stalls the server. While each big
 * request is in flight, to the end of its stream, GET /api/v1/version is asked every ~50 ms and
 * must answer each time, 200 (docs/decisions/016-bounded-token-estimation.md); how long the answers
 * took is reported, and measured against a control in bench/stall.ts, not asserted here.
 *
 * Sizes: a turn body may be 32 MiB, so the prompt and the tool result are 1 MiB (1,048,576
 * characters) each. Configuration bodies are bounded by the server's default body limit of 1 MiB
 * (spec §8 shows no size), so the instruction is the largest body under it: 1 MiB less its JSON
 * envelope. The model is sandbox/echo-1m, whose 1M-token window holds ~540k tokens of letters.
 */

const MODEL = 'sandbox/echo-1m'
const MiB = 1024 * 1024
const POLL_EVERY_MS = 50


type Polled = { answers: number; slowest: number; failures: string[] }

/**
 * Asks GET /api/v1/version every POLL_EVERY_MS while `work` runs, and once more after it: each
 * answer's time, the slowest, and anything that was not a 200.
 */
async function whilePolling<T>(url: string, work: () => Promise<T>): Promise<{ result: T; polled: Polled }> {
  const polled: Polled = { answers: 0, slowest: 0, failures: [] }
  let done = false
  const poll = async () => {
    do {
      const started = performance.now()
      try {
        const response = await fetch(`${url}/api/v1/version`, { signal: AbortSignal.timeout(5_000) })
        await response.arrayBuffer()
        const took = performance.now() - started
        polled.answers++
        polled.slowest = Math.max(polled.slowest, took)
        if (response.status !== 200) polled.failures.push(`HTTP ${response.status}`)
      } catch (error) {
        polled.failures.push(`failed after ${Math.round(performance.now() - started)} ms: ${(error as Error).message}`)
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_EVERY_MS))
    } while (!done)
  }
  const poller = poll()
  try {
    const result = await work()
    return { result, polled }
  } finally {
    done = true
    await poller
  }
}

describe('the server stays responsive while a request carries 1 MiB of unbroken text', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-e2e-responsiveness-'))
  let server: ServerProcess | undefined
  let devKey = ''
  const env = { DATA_DIR: dataDir, NODE_ID: 'e2e-responsiveness', SANDBOX: 'on' }

  const api = (path: string, init: { method?: string; body?: unknown } = {}) => request(server!.url, path, { key: devKey, timeoutMs: 30_000, ...init })
  const ok = async (path: string, init: { method?: string; body?: unknown } = {}, status = 200) => {
    const res = await api(path, init)
    expect(res.status, `${init.method ?? 'GET'} ${path}: ${res.text.slice(0, 500)}`).toBe(status)
    return res.json()
  }
  const newChat = async (namespace?: string): Promise<string> => (await ok('/api/v1/chats', { method: 'POST', body: namespace ? { namespace } : {} }, 201)).id

  /** One turn streamed to its end, which must be `done`. */
  const turn = async (chatId: string, body: Record<string, unknown>): Promise<SseFrame[]> => {
    const answer = await postTurn(server!.url, devKey, chatId, { model: MODEL, ...body }, 120_000)
    if (!answer.ok) throw new Error(`expected a stream, got HTTP ${answer.status}: ${answer.text.slice(0, 500)}\n${server!.stderr()}`)
    expect(await answer.closed).toBe('end')
    const last = answer.frames.at(-1)!
    expect(last.event, `${answer.frames.map((f) => f.event).join(',')}\n${JSON.stringify(last.data).slice(0, 500)}`).toBe('done')
    return answer.frames
  }

  const expectResponsive = (polled: Polled) => {
    console.log(`/version: ${polled.answers} answers, slowest ${Math.round(polled.slowest)} ms`)
    expect(polled.failures, `slowest ${Math.round(polled.slowest)} ms`).toEqual([])
    expect(polled.answers).toBeGreaterThan(0)
  }

  beforeAll(async () => {
    server = await startServer({ env, timeoutMs: 25_000 })
    devKey = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
  }, machineCeiling(30_000))

  afterAll(async () => {
    await server?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('a turn whose prompt is 1 MiB of random lowercase letters', async () => {
    const chatId = await newChat()
    const text = unbrokenLetters(MiB, 1)
    const { result: frames, polled } = await whilePolling(server!.url, () => turn(chatId, { input: [{ type: 'prompt', text }] }))
    expectResponsive(polled)
    const done = frames.at(-1)!.data
    // About 0.5 tokens a random letter, estimated from samples: over 400k tokens, well under the window.
    expect(done.usage.input_tokens + done.usage.cache_read_tokens).toBeGreaterThan(400_000)
    expect(done.usage.input_tokens + done.usage.cache_read_tokens).toBeLessThan(700_000)
  }, 180_000)

  test('an instruction of the largest body the config routes take (~1 MiB unbroken), then a turn under it', async () => {
    const envelope = JSON.stringify({ body: '', mode: 'append', namespace: 'bulky' })
    const body = unbrokenLetters(DEFAULT_BODY_LIMIT - envelope.length, 2)
    const { result: published, polled: publishing } = await whilePolling(server!.url, () =>
      ok('/api/v1/config/instructions', { method: 'POST', body: { body, mode: 'append', namespace: 'bulky' } }),
    )
    expectResponsive(publishing)
    expect(published.estimated_tokens).toBeGreaterThan(400_000)

    // One byte more is the body limit's 413, not a stall.
    const over = await api('/api/v1/config/instructions', { method: 'POST', body: { body: `${body}x`, mode: 'append', namespace: 'bulky' } })
    expect(over.status).toBe(413)

    const chatId = await newChat('bulky')
    const { result: frames, polled } = await whilePolling(server!.url, () => turn(chatId, { input: [{ type: 'prompt', text: 'hello' }] }))
    expectResponsive(polled)
    const done = frames.at(-1)!.data
    expect(done.usage.input_tokens + done.usage.cache_read_tokens).toBeGreaterThan(published.estimated_tokens)
  }, 180_000)

  test('a tool result of 1 MiB of random lowercase letters', async () => {
    const chatId = await newChat()
    const tools = [{ name: 'fetch_page', input_schema: { type: 'object', properties: { url: { type: 'string' } } } }]
    const call = await turn(chatId, { input: [{ type: 'prompt', text: '/tool fetch_page {"url":"https://example.com"}' }], tools })
    const toolUseId = call.find((f) => f.event === 'block_start')!.data.tool_use_id as string
    expect(call.at(-1)!.data.stop_reason).toBe('tool_use')

    const text = unbrokenLetters(MiB, 3)
    const { result: frames, polled } = await whilePolling(server!.url, () =>
      turn(chatId, { input: [{ type: 'tool_result', tool_use_id: toolUseId, tool_name: 'fetch_page', text }], tools }),
    )
    expectResponsive(polled)
    expect(frames[0]!.data.closed_tool_calls).toEqual([toolUseId])
  }, 180_000)

  test('restarted with the stored ~1 MiB instruction, the first turn under it keeps /version answering', async () => {
    await server!.stop()
    server = await startServer({ env, timeoutMs: 25_000 })
    const chatId = await newChat('bulky')
    const { result: frames, polled } = await whilePolling(server!.url, () => turn(chatId, { input: [{ type: 'prompt', text: 'hello again' }] }))
    expectResponsive(polled)
    expect(frames.at(-1)!.data.usage.input_tokens + frames.at(-1)!.data.usage.cache_read_tokens).toBeGreaterThan(400_000)
  }, machineCeiling(180_000))
})
