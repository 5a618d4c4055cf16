import type { LanguageModelV4, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { afterEach, describe, expect, it } from 'vitest'
import type { LanguageModelFor } from '../../../src/providers/language-models.ts'
import { createSandboxLanguageModel } from '../../../src/providers/sandbox/sandbox-language-model.ts'
import { createTestApp, type TestContext } from '../../helpers/test-app.ts'
import { deltaText, finishPart, fundedOrg, newChat, prompt, sandboxCatalogue, turn, variantOf } from '../../helpers/turns.ts'

/**
 * Issue 22, item 3: a burst of stream parts that are all ready at once (`/long 40000`, a vendor's
 * buffered chunks) must not hold the event loop until it is all relayed. Each case schedules a
 * `setImmediate` as the stream starts and asserts it ran while the stream still had parts to give:
 * the loop turned over during the burst. Ordering only, never wall-clock time.
 */

const WORDS = 40_000
/** A vendor's burst: far more parts than one slice. */
const BURST_PARTS = 10_000

/**
 * A model whose stream counts the deltas its consumer has taken, with a setImmediate scheduled at
 * its first read: `deltasAtTurn` is how many it had taken when the loop next turned over.
 */
type Observed = { deltas: number; deltasAtTurn: number | null }

function observed(inner: LanguageModelV4, seen: Observed[]): LanguageModelV4 {
  return {
    ...inner,
    async doStream(options) {
      const call = await inner.doStream(options)
      const o: Observed = { deltas: 0, deltasAtTurn: null }
      let first = true
      seen.push(o)
      const source = call.stream.getReader()
      // Pull-based: a part is counted when the consumer asks for it, not before.
      const stream = new ReadableStream<LanguageModelV4StreamPart>(
        {
          async pull(controller) {
            // Scheduled as the consumer starts reading: it runs at the loop's next turn.
            if (first) setImmediate(() => (o.deltasAtTurn = o.deltas))
            first = false
            const { done, value } = await source.read()
            if (done) return controller.close()
            if (value.type === 'text-delta') o.deltas += 1
            controller.enqueue(value)
          },
          cancel: (reason) => source.cancel(reason),
        },
        { highWaterMark: 0 },
      )
      return { ...call, stream }
    },
  }
}

/** A vendor's buffered burst: every part already queued when the stream is handed over. */
function burstModel(words: number): LanguageModelV4 {
  return {
    specificationVersion: 'v4',
    provider: 'fake',
    modelId: 'burst',
    supportedUrls: {},
    async doGenerate() {
      throw new Error('streams only')
    },
    async doStream() {
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] })
          controller.enqueue({ type: 'text-start', id: 't' })
          for (let i = 0; i < words; i++) controller.enqueue({ type: 'text-delta', id: 't', delta: i === 0 ? 'w0' : ` w${i}` })
          controller.enqueue({ type: 'text-end', id: 't' })
          controller.enqueue(finishPart())
          controller.close()
        },
      })
      return { stream, response: { headers: {} } }
    },
  }
}

const BURST = variantOf('fake/burst', '5b7a0c1e-2222-4b2b-8c2c-000000000022', { provider: 'fake', vendor_model_id: 'burst' })

describe('a burst of ready parts lets the event loop turn over', () => {
  let ctx: TestContext | undefined
  afterEach(async () => {
    await ctx?.close()
    ctx = undefined
  })

  it('the sandbox: `/long 40000` yields before its finish part is queued', async () => {
    const model = createSandboxLanguageModel('echo')
    const { stream } = await model.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: `/long ${WORDS}` }] }] })
    let turned = false
    setImmediate(() => (turned = true))
    const reader = stream.getReader()
    let deltas = 0
    let turnedBeforeFinish: boolean | null = null
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      if (value.type === 'text-delta') deltas += 1
      if (value.type === 'finish') turnedBeforeFinish = turned
    }
    expect(deltas).toBe(WORDS)
    expect(turnedBeforeFinish).toBe(true)
  })

  it('the relay: a vendor burst already queued is read in slices, with every frame in order', async () => {
    const seen: Observed[] = []
    const fakes: LanguageModelFor = (entry) => {
      if (entry.provider !== 'fake') throw new Error('only the burst model here')
      return observed(burstModel(BURST_PARTS), seen)
    }
    ctx = await createTestApp({ catalogue: [...sandboxCatalogue(), BURST], languageModelFor: fakes })
    const org = fundedOrg(ctx)
    const chatId = await newChat(ctx, org.auth)
    const t = await turn(ctx, org.auth, chatId, { model: BURST.name, input: [prompt('go')] })

    expect(t.events.at(-1)).toBe('done')
    const body = t.events.slice(t.events.indexOf('block_start'))
    expect(body).toEqual(['block_start', ...Array(BURST_PARTS).fill('delta'), 'block_stop', 'done'])
    expect(deltaText(t.frames, 'text')).toBe(Array.from({ length: BURST_PARTS }, (_, i) => (i === 0 ? 'w0' : ` w${i}`)).join(''))
    // The loop turned over while deltas were still to come, not only once they were all relayed.
    const [o] = seen
    expect(o!.deltasAtTurn).not.toBeNull()
    expect(o!.deltasAtTurn!).toBeLessThan(o!.deltas)
  })

  it('the whole turn: `/long 40000` on the sandbox relays in slices, the loop turning over before its end', async () => {
    const seen: Observed[] = []
    const sandbox = new Map<string, LanguageModelV4>()
    const models: LanguageModelFor = (entry) => {
      let model = sandbox.get(entry.vendor_model_id)
      if (!model) sandbox.set(entry.vendor_model_id, (model = observed(createSandboxLanguageModel(entry.vendor_model_id), seen)))
      return model
    }
    ctx = await createTestApp({ catalogue: sandboxCatalogue(), languageModelFor: models })
    const org = fundedOrg(ctx)
    const chatId = await newChat(ctx, org.auth)
    const t = await turn(ctx, org.auth, chatId, { input: [prompt(`/long ${WORDS}`)] })

    expect(t.events.at(-1)).toBe('done')
    // As many words as the model's output limit lets through, one delta each.
    const deltas = t.of('delta').length
    expect(deltas).toBeGreaterThan(10_000)
    expect(deltaText(t.frames, 'text').split(' ')).toHaveLength(deltas)
    // The loop turned over while deltas were still to come, not only once they were all relayed.
    const [o] = seen
    expect(o!.deltasAtTurn).not.toBeNull()
    expect(o!.deltasAtTurn!).toBeLessThan(o!.deltas)
  })
})
