import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { describe, expect, it } from 'vitest'
import type { RunDeps } from '../../../src/actors/run-deps.ts'
import { streamRun, type RunSink } from '../../../src/actors/stream-run.ts'
import type { CatalogueEntry } from '../../../src/domain/catalogue/catalogue-entry.ts'
import type { PartBody } from '../../../src/domain/parts.ts'
import { scriptedModel } from '../../helpers/turns.ts'

/**
 * The streaming step every run shares (src/actors/stream-run.ts), on a fake model and a sink that
 * keeps what it is given: no ledger, no channel, no app. The sink below is a compaction run's
 * (blocks kept in memory), with the frames counted to show what a customer's channel would get.
 */

const FINISH: LanguageModelV4StreamPart = {
  type: 'finish',
  finishReason: { unified: 'stop', raw: 'stop' },
  usage: { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } },
}

const text = (id: string, delta: string): LanguageModelV4StreamPart[] => [
  { type: 'text-start', id },
  { type: 'text-delta', id, delta },
  { type: 'text-end', id },
]

type Fake = { model: LanguageModelV4; calls: LanguageModelV4CallOptions[] }

/** A model whose stream sends `parts`, then closes, or stays open (`hold`) until the run cancels it. */
function fakeModel(parts: LanguageModelV4StreamPart[], options: { hold?: boolean; headers?: Record<string, string>; refuse?: Error } = {}): Fake {
  const calls: LanguageModelV4CallOptions[] = []
  const scripted = scriptedModel(async (emit) => {
    for (const part of parts) emit(part)
    if (options.hold) await new Promise<never>(() => undefined)
  }, options.headers)
  const model: LanguageModelV4 = {
    ...scripted,
    async doStream(call) {
      calls.push(call)
      if (options.refuse) throw options.refuse
      return scripted.doStream(call)
    },
  }
  return { model, calls }
}

const entry = (provider = 'fake') => ({ id: 'model-1', name: `${provider}/model`, provider, vendor_model_id: 'model' }) as CatalogueEntry

const depsFor = (fake: Fake) =>
  ({
    languageModelFor: () => fake.model,
    store: { writes: { write: async <T>(work: () => T) => work() }, runs: { getById: () => undefined } },
  }) as unknown as RunDeps

/** A compaction run's sink: blocks kept in memory, frames only counted. */
function collectingSink() {
  const kept: PartBody[] = []
  const frames: string[] = []
  const failures: string[] = []
  let opened = false
  const sink: RunSink = {
    frame: (event) => void frames.push(event),
    keep: async (body) => {
      kept.push(body)
      return null
    },
    opened: () => void (opened = true),
    failedBeforeStream: (message) => void failures.push(message),
  }
  return { sink, kept, frames, failures, opened: () => opened }
}

async function run(fake: Fake, sink: RunSink, options: { provider?: string; signal?: AbortSignal } = {}) {
  return streamRun(depsFor(fake), {
    runId: 'run-1',
    model: entry(options.provider),
    options: { prompt: [{ role: 'user', content: [{ type: 'text', text: 'summarise' }] }], maxOutputTokens: 100 },
    estimatedInputTokens: 40,
    signal: options.signal ?? new AbortController().signal,
    sink,
  })
}

describe('streamRun', () => {
  it('a compaction-style sink keeps the closed blocks in order; the outcome has the vendor’s usage, request id and timing', async () => {
    const fake = fakeModel(
      [
        { type: 'response-metadata', id: 'resp-1', modelId: 'model-2025' },
        { type: 'reasoning-start', id: 'r' },
        { type: 'reasoning-delta', id: 'r', delta: 'thinking' },
        { type: 'reasoning-end', id: 'r' },
        ...text('a', 'The chat '),
        ...text('b', 'so far.'),
        FINISH,
      ],
      { headers: { 'x-request-id': 'req-1' } },
    )
    const c = collectingSink()
    const outcome = await run(fake, c.sink)
    expect(c.kept).toEqual([
      { type: 'reasoning', text: 'thinking' },
      { type: 'message', text: 'The chat ' },
      { type: 'message', text: 'so far.' },
    ])
    // The summary a compaction run makes: its text blocks, reasoning left out.
    expect(c.kept.flatMap((b) => (b.type === 'message' ? [b.text] : [])).join('')).toBe('The chat so far.')
    expect(c.frames.filter((f) => f === 'block_stop')).toHaveLength(3)
    expect(c.opened()).toBe(true)
    expect(outcome).toMatchObject({
      status: 'succeeded',
      stopReason: 'end_turn',
      error: null,
      usage: { input_tokens: 10, output_tokens: 5 },
      usageLost: false,
      providerResponseId: 'resp-1',
      providerRequestId: 'req-1',
      modelServed: 'model-2025',
      streamOpened: true,
      pendingToolCalls: [],
    })
    expect(outcome.firstDeltaMs).toEqual(expect.any(Number))
    // Raw chunks are asked for only where usage is read from them.
    expect(fake.calls[0]!.includeRawChunks).toBe(false)
  })

  it('an error part mid-stream fails the run; the block it cut is kept, the usage known so far billed', async () => {
    const fake = fakeModel([{ type: 'text-start', id: 'a' }, { type: 'text-delta', id: 'a', delta: 'half a summ' }, { type: 'error', error: new Error('Overloaded') }, ...text('b', 'never read'), FINISH])
    const c = collectingSink()
    const outcome = await run(fake, c.sink)
    expect(outcome).toMatchObject({ status: 'failed', stopReason: null, usageLost: true, streamOpened: true })
    expect(outcome.error).toEqual({ code: 'upstream_error', message: expect.stringMatching(/^the provider failed mid-stream: .*Overloaded/) })
    expect(c.kept).toEqual([{ type: 'message', text: 'half a summ' }])
    expect(outcome.usage.input_tokens).toBe(40)
    expect(outcome.usage.output_tokens).toBeGreaterThan(0)
  })

  it('a stream that ends without its finish is failed, never a success, even with text', async () => {
    const fake = fakeModel(text('a', 'looks complete'))
    const c = collectingSink()
    const outcome = await run(fake, c.sink)
    expect(outcome).toMatchObject({ status: 'failed', usageLost: true, streamOpened: true })
    expect(outcome.error).toEqual({ code: 'upstream_error', message: 'the provider stream ended without saying how the answer ended: it may be cut off' })
    expect(c.kept).toEqual([{ type: 'message', text: 'looks complete' }])
  })

  it('a cut Anthropic stream is billed for the input its raw message_start reported, not the estimate', async () => {
    const fake = fakeModel([
      { type: 'raw', rawValue: { type: 'message_start', message: { usage: { input_tokens: 7, cache_read_input_tokens: 3, cache_creation_input_tokens: 0, output_tokens: 1 } } } },
      ...text('a', 'cut'),
    ])
    const outcome = await run(fake, collectingSink().sink, { provider: 'anthropic' })
    expect(fake.calls[0]!.includeRawChunks).toBe(true)
    expect(outcome).toMatchObject({ status: 'failed', usageLost: true, usage: { input_tokens: 7, cache_read_tokens: 3, cache_write_tokens: 0 } })
  })

  it('an abort cancels the run: the stream is cancelled, what streamed is kept', async () => {
    const abort = new AbortController()
    const fake = fakeModel([{ type: 'text-start', id: 'a' }, { type: 'text-delta', id: 'a', delta: 'partial' }], { hold: true })
    const c = collectingSink()
    const sink: RunSink = {
      ...c.sink,
      frame: (event, data) => {
        c.sink.frame(event, data)
        // The customer cancels once the first text is out.
        if (event === 'delta' || event === 'block_start') abort.abort()
      },
    }
    const outcome = await run(fake, sink, { signal: abort.signal })
    expect(outcome).toMatchObject({ status: 'cancelled', error: null, stopReason: null, streamOpened: true, usageLost: true })
    expect(c.kept).toEqual([{ type: 'message', text: 'partial' }])
    expect(fake.calls[0]!.abortSignal).toBe(abort.signal)
  })

  it('a provider call that fails before its stream tells the sink, and nothing opened', async () => {
    const c = collectingSink()
    const outcome = await run(fakeModel([], { refuse: new Error('bad prompt') }), c.sink)
    // No request went through the vendor fetch: the library refused it itself.
    const message = 'the vendor library refused the request before sending it: bad prompt'
    expect(c.failures).toEqual([message])
    expect(c.opened()).toBe(false)
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'upstream_error', message }, streamOpened: false, vendorRequests: 0 })
    expect(outcome.usage.input_tokens).toBe(0)
  })

  it('a block the sink cannot keep fails the run with the sink’s error; nothing is kept or framed after it', async () => {
    const fake = fakeModel([...text('a', 'first'), ...text('b', 'second'), FINISH])
    const frames: string[] = []
    const sink: RunSink = {
      ...collectingSink().sink,
      frame: (event) => void frames.push(event),
      keep: async () => ({ code: 'internal', message: 'could not keep it' }),
    }
    const outcome = await run(fake, sink)
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'internal', message: 'could not keep it' } })
    expect(frames).toEqual(['block_start', 'delta'])
  })
})
