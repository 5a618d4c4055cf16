import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { deltaText, moneyUnits, postTurn, type SseFrame } from './turn-client.ts'
import { FIXTURES, type ReplayResponse, type Vendor } from './vendor-fixtures/index.ts'
import { startVendorServer, VENDOR_MODELS, type VendorServer } from './vendor-server.ts'

/**
 * Failing vendors, per vendor, through the real server process and the real @ai-sdk packages over
 * the loopback replay server (decision 015): retries before the first byte, the first-byte deadline,
 * the idle timeout, and answers that are cut, malformed, unfinished or not a stream. Each case
 * checks the client's answer, the run's final status, its bill, and the catalogue's uptime after it.
 */

const FIRST_BYTE_MS = 3_000
const IDLE_MS = 700
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const PROMPT = 'What is the capital of Norway? One sentence, please.'

/** The text fixture's stream, its events and headers. */
const textStream = (vendor: Vendor) => {
  const response = FIXTURES[vendor].text.response
  if (response.kind !== 'stream') throw new Error(`${vendor}'s text fixture is not a stream`)
  return response
}

// Where each vendor says how its answer ended: everything before it is a partial answer.
const FINISH = /"finish_reason":"|"finishReason"|event: message_delta|event: response\.completed|"type":"response\.completed"|^data: \[DONE\]/
const partialEvents = (vendor: Vendor) => {
  const { events } = textStream(vendor)
  const finish = events.findIndex((e) => FINISH.test(e))
  if (finish <= 0) throw new Error(`no finish found in ${vendor}'s fixture`)
  return events.slice(0, finish)
}

const vendorError = (vendor: Vendor, status: number, headers: Record<string, string>): ReplayResponse => ({
  ...FIXTURES[vendor].serverError,
  status,
  headers: { ...FIXTURES[vendor].serverError.headers, ...headers },
})

describe('failing vendors, per vendor, over the loopback replay server', () => {
  let vendors: VendorServer

  beforeAll(async () => {
    // The vendor deadlines these cases run into, short enough for a test.
    vendors = await startVendorServer({
      name: 'resilience',
      env: { VENDOR_FIRST_BYTE_TIMEOUT_MS: String(FIRST_BYTE_MS), VENDOR_IDLE_TIMEOUT_MS: String(IDLE_MS) },
    })
  })

  afterAll(() => vendors?.stop())

  const catalogueFigures = async (model: string) => {
    const res = await vendors.api('/api/v1/models')
    expect(res.status, res.text).toBe(200)
    const entry = (res.json() as any[]).find((m) => m.name === model)
    return { uptime: entry.uptime as string | null, ttft: entry.avg_time_to_first_token_ms as number | null }
  }

  /** The catalogue's uptime once it includes the calls so far (it refreshes within a second of a call). */
  const expectUptime = async (model: string, successes: number, calls: number) => {
    const expected = (successes / calls).toFixed(4)
    const deadline = Date.now() + 5_000
    let seen: string | null = null
    while (Date.now() < deadline) {
      seen = (await catalogueFigures(model)).uptime
      if (seen === expected) return
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(seen, `uptime of ${model} after ${successes} successes in ${calls} calls`).toBe(expected)
  }

  test.concurrent.each(Object.keys(FIXTURES) as Vendor[])('%s', async (vendor) => {
    const model = VENDOR_MODELS[vendor]
    const fixture = FIXTURES[vendor]
    const created = await vendors.api('/api/v1/chats', { method: 'POST', body: {} })
    expect(created.status, created.text).toBe(201)
    const chatId = created.json().id as string
    let calls = 0
    let successes = 0

    const send = () => postTurn(vendors.server.url, vendors.devKey, chatId, { model, input: [{ type: 'prompt', text: PROMPT }] }, 20_000)
    const requestsSoFar = () => vendors.replay.requestsTo(vendor).length

    /** A turn that must stream: its frames once closed. */
    const streamed = async () => {
      const answer = await send()
      if (!answer.ok) throw new Error(`${vendor}: expected a stream, got HTTP ${answer.status}: ${answer.text}`)
      expect(await answer.closed).toBe('end')
      return { frames: answer.frames, runId: answer.frames[0]!.data.run_id as string, last: answer.frames.at(-1)! }
    }

    const expectSucceeded = async (frames: SseFrame[], runId: string) => {
      expect(frames.at(-1)!.event, frames.map((f) => f.event).join(',')).toBe('done')
      expect(deltaText(frames, 'text')).toBe(fixture.text.text)
      const run = await vendors.getRun(runId)
      expect(run).toMatchObject({ status: 'succeeded', is_live: false })
      expect(moneyUnits(run.cost)).toBeGreaterThan(0n)
      calls += 1
      successes += 1
      await expectUptime(model, successes, calls)
    }

    /** A failure after the stream opened: an SSE error naming the run, the run failed and billed for its estimate. */
    const expectFailedMidStream = async (message: RegExp) => {
      const before = requestsSoFar()
      const t = await streamed()
      expect(t.last.event, t.frames.map((f) => f.event).join(',')).toBe('error')
      expect(t.last.data).toMatchObject({ code: 'upstream_error', details: { run_id: t.runId } })
      expect(t.last.data.message).toMatch(message)
      // Nothing is retried once the first byte is in.
      expect(requestsSoFar() - before).toBe(1)
      const run = await vendors.getRun(t.runId)
      expect(run).toMatchObject({ status: 'failed', is_live: false })
      expect(run.error).toMatch(message)
      // The packed input reached the vendor: billed as estimated, never as a success.
      expect(moneyUnits(run.cost)).toBeGreaterThan(0n)
      calls += 1
      await expectUptime(model, successes, calls)
      return t
    }

    /** A failure before the first byte: HTTP 502 naming the failed run, billed nothing, the chat free again. */
    const expectFailedBeforeStream = async (message: RegExp) => {
      const started = Date.now()
      const answer = await send()
      const elapsed = Date.now() - started
      if (answer.ok) throw new Error(`${vendor}: expected HTTP 502, got a stream: ${answer.frames.map((f) => f.event).join(',')}`)
      expect(answer.status, answer.text).toBe(502)
      const error = answer.json().error
      expect(error).toMatchObject({ code: 'upstream_error', details: { run_id: expect.stringMatching(UUID) } })
      expect(error.message).toMatch(message)
      const run = await vendors.getRun(error.details.run_id)
      expect(run).toMatchObject({ status: 'failed', is_live: false })
      expect(moneyUnits(run.cost)).toBe(0n)
      calls += 1
      await expectUptime(model, successes, calls)
      return elapsed
    }

    // 1. 429 with Retry-After, then the answer: one retry, after the wait it asked for, inside the time to first token.
    let before = requestsSoFar()
    vendors.replay.respondNext(vendor, vendorError(vendor, 429, { 'retry-after': '1' }))
    let t = await streamed()
    expect(requestsSoFar() - before).toBe(2)
    await expectSucceeded(t.frames, t.runId)
    expect((await catalogueFigures(model)).ttft).toBeGreaterThanOrEqual(1_000)

    // 2. A 500, then the answer.
    before = requestsSoFar()
    vendors.replay.respondNext(vendor, vendorError(vendor, 500, {}))
    t = await streamed()
    expect(requestsSoFar() - before).toBe(2)
    await expectSucceeded(t.frames, t.runId)

    // 3. A vendor that never answers: 502 at the first-byte deadline, and the chat takes a turn right after.
    vendors.replay.respondNext(vendor, { kind: 'hang' })
    const waited = await expectFailedBeforeStream(/sent nothing within 3000 ms/)
    // Not before the deadline; that it gave up at all (the vendor hangs for ever) is the 502 itself.
    expect(waited).toBeGreaterThanOrEqual(FIRST_BYTE_MS - 50)
    t = await streamed()
    await expectSucceeded(t.frames, t.runId)

    // 4. A hang mid-stream: the idle timeout ends it with an SSE error; the partial text is kept.
    const partial = partialEvents(vendor)
    vendors.replay.respondNext(vendor, { ...textStream(vendor), events: partial, end: 'hang' })
    const hung = await expectFailedMidStream(/silent for 700 ms/)
    expect(fixture.text.text.startsWith(deltaText(hung.frames, 'text'))).toBe(true)

    // 5. A stream cut off (the connection drops).
    vendors.replay.respondNext(vendor, { ...textStream(vendor), events: partial, end: 'destroy' })
    await expectFailedMidStream(/./)

    // 6. A malformed chunk in the middle of the answer.
    const events = textStream(vendor).events
    vendors.replay.respondNext(vendor, { ...textStream(vendor), events: [...partial, 'data: {"unterminated\n\n', ...events.slice(partial.length)] })
    await expectFailedMidStream(/./)

    // 7. A stream that closes cleanly without its finish event.
    vendors.replay.respondNext(vendor, { ...textStream(vendor), events: partial, end: 'close' })
    await expectFailedMidStream(/ended without saying how the answer ended/)

    // 8. A 200 that is not a stream (a non-streaming JSON answer): failed, not retried.
    before = requestsSoFar()
    vendors.replay.respondNext(vendor, { kind: 'json', status: 200, headers: { 'content-type': 'application/json' }, body: { id: 'not-a-stream', content: [] } })
    await expectFailedBeforeStream(/instead of an event stream/)
    expect(requestsSoFar() - before).toBe(1)

    expect({ vendor, calls, successes }).toEqual({ vendor, calls: 9, successes: 3 })
  })
})
