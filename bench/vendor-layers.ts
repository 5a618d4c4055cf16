/**
 * `node --import tsx bench/vendor-layers.ts` (issue 34): the vendor layer alone, in process, no
 * socket. Each case takes the bench upstream's recorded answer (bench/vendor-upstream.ts: the
 * fixtures of test/e2e/vendor-fixtures widened to 20 text deltas) as one Response body and reads it
 * to the end, layer by layer, so the CPU each layer adds per turn is the difference between rows:
 *
 * - `body`: the Response's body read to the end (the floor of any path);
 * - `sse+json`: eventsource-parser (EventSourceParserStream) and JSON.parse per event;
 * - `sdk bare`: the @ai-sdk package's doStream on a fetch that returns the Response, parts read;
 * - `sdk parley`: the model as Parley builds it (createLanguageModelsOver: the vendor fetch, the
 *   base64 wrapper), called inside withVendorCallRecord, with the includeRawChunks Parley asks for,
 *   its thin path off (VENDOR_THIN_STREAMS=0);
 * - `sdk head`: what the thin path still asks of the package per call: its doStream over an empty
 *   event stream (the request built, the stream-start part read), then cancelled;
 * - `thin parley`: the same with the thin path on (src/providers/thin, decision 050), as Parley runs;
 *   the package's path again for a vendor without one.
 *
 * CPU per call is process.cpuUsage over ITER sequential calls after WARM warm-up calls, median of
 * ROUNDS interleaved rounds. Environment: BENCH_ITERATIONS (default 2000), BENCH_ROUNDS (default 5),
 * BENCH_LAYERS_CASES and BENCH_LAYERS_FORMATS (comma-separated names: only those, e.g. under --cpu-prof).
 */
import type { LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider'
import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { createLanguageModelsOver } from '../src/providers/language-models.ts'
import { newVendorCallRecord, withVendorCallRecord } from '../src/providers/vendor-call-record.ts'
import { anthropicTextStream } from '../test/e2e/vendor-fixtures/anthropic.ts'
import { openaiTextStream } from '../test/e2e/vendor-fixtures/openai.ts'

const ITER = Number(process.env.BENCH_ITERATIONS ?? 2000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const WARM = 300
const parts = Array.from({ length: 20 }, (_, i) => `${i === 0 ? '' : ' '}word${i}`)

type Format = { key: 'openai' | 'anthropic'; model: string; stream: { headers: Record<string, string>; events: string[] }; options: LanguageModelV4CallOptions }

const prompt: LanguageModelV4CallOptions['prompt'] = [
  { role: 'system', content: 'You are helpful.' },
  { role: 'user', content: [{ type: 'text', text: 'Name the capital of Norway.' }] },
]

const FORMATS: Format[] = [
  {
    key: 'openai',
    model: 'gpt-5',
    stream: openaiTextStream(parts),
    options: { prompt, maxOutputTokens: 1024, providerOptions: { openai: { reasoningEffort: 'medium', reasoningSummary: null, promptCacheKey: 'chat-1', store: false } } },
  },
  {
    key: 'anthropic',
    model: 'claude-haiku-4-5',
    stream: anthropicTextStream(parts),
    options: { prompt, maxOutputTokens: 1024, includeRawChunks: true, providerOptions: { anthropic: { thinking: { type: 'disabled' } } } },
  },
]

const encoder = new TextEncoder()

/** The recorded answer as a fresh Response, its events in one chunk as the upstream writes them. */
const responseOf = (f: Format) => () => new Response(encoder.encode(f.stream.events.join('')), { status: 200, headers: f.stream.headers })

async function drain<T>(stream: ReadableStream<T>): Promise<number> {
  const reader = stream.getReader()
  let n = 0
  for (;;) {
    const { done } = await reader.read()
    if (done) return n
    n++
  }
}

type Case = { name: string; run: () => Promise<number> }

function casesFor(f: Format): Case[] {
  const response = responseOf(f)
  const fetchDouble = (async () => response()) as unknown as typeof fetch
  const env = { OPENAI_API_KEY: 'sk-x', ANTHROPIC_API_KEY: 'sk-ant-x', OPENAI_BASE_URL: 'http://upstream.invalid/v1', ANTHROPIC_BASE_URL: 'http://upstream.invalid/v1' }
  const bare: LanguageModelV4 =
    f.key === 'openai'
      ? createOpenAI({ apiKey: 'sk-x', baseURL: env.OPENAI_BASE_URL, fetch: fetchDouble })(f.model)
      : createAnthropic({ apiKey: 'sk-ant-x', baseURL: env.ANTHROPIC_BASE_URL, fetch: fetchDouble })(f.model)
  const empty = (async () => new Response('', { status: 200, headers: f.stream.headers })) as unknown as typeof fetch
  const emptyBodied: LanguageModelV4 =
    f.key === 'openai'
      ? createOpenAI({ apiKey: 'sk-x', baseURL: env.OPENAI_BASE_URL, fetch: empty })(f.model)
      : createAnthropic({ apiKey: 'sk-ant-x', baseURL: env.ANTHROPIC_BASE_URL, fetch: empty })(f.model)
  const network = { fetch: fetchDouble, sleep: async () => undefined, random: Math.random, now: Date.now }
  const parley = createLanguageModelsOver({ ...env, VENDOR_THIN_STREAMS: '0' }, network)({ provider: f.key, vendor_model_id: f.model })
  const thin = createLanguageModelsOver(env, network)({ provider: f.key, vendor_model_id: f.model })
  return [
    { name: 'body', run: () => drain(response().body!) },
    {
      name: 'sse+json',
      run: async () => {
        const events = response()
          .body!.pipeThrough(new TextDecoderStream())
          .pipeThrough(new EventSourceParserStream())
          .pipeThrough(new TransformStream({ transform: (e, c) => c.enqueue(JSON.parse(e.data)) }))
        return drain(events)
      },
    },
    { name: 'sdk bare', run: async () => drain((await bare.doStream(f.options)).stream) },
    { name: 'sdk parley', run: async () => drain((await withVendorCallRecord(newVendorCallRecord(), () => parley.doStream(f.options))).stream) },
    {
      name: 'sdk head',
      run: async () => {
        const reader = (await emptyBodied.doStream(f.options)).stream.getReader()
        await reader.read()
        await reader.cancel()
        return 1
      },
    },
    { name: 'thin parley', run: async () => drain((await withVendorCallRecord(newVendorCallRecord(), () => thin.doStream(f.options))).stream) },
  ]
}

async function cpuPerCall(c: Case, n: number): Promise<number> {
  const before = process.cpuUsage()
  for (let i = 0; i < n; i++) await c.run()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / n
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!

async function main() {
  const onlyCases = process.env.BENCH_LAYERS_CASES?.split(',')
  const onlyFormats = process.env.BENCH_LAYERS_FORMATS?.split(',')
  for (const f of FORMATS.filter((f) => !onlyFormats || onlyFormats.includes(f.key))) {
    const cases = casesFor(f).filter((c) => !onlyCases || onlyCases.includes(c.name))
    for (const c of cases) {
      const n = await c.run()
      process.stdout.write(`${f.key} ${c.name}: ${n} items per call\n`)
      await cpuPerCall(c, WARM)
    }
    const samples = new Map(cases.map((c) => [c.name, [] as number[]]))
    for (let r = 0; r < ROUNDS; r++) for (const c of cases) samples.get(c.name)!.push(await cpuPerCall(c, ITER))
    for (const c of cases) process.stdout.write(`${f.key.padEnd(10)} ${c.name.padEnd(12)} ${median(samples.get(c.name)!).toFixed(0).padStart(6)} µs CPU per call (median of ${ROUNDS} × ${ITER})\n`)
  }
}

await main()
