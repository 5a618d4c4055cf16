import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { createSseDecoder } from './sse.ts'
import type { ThinConverter } from './thin-converter.ts'

type DoStreamResult = Awaited<ReturnType<LanguageModelV4['doStream']>>
type Fetch = typeof globalThis.fetch

/** A vendor wire format the thin path streams: which calls it covers (decided before the call) and its converter. */
export type ThinFormat = {
  covers(options: LanguageModelV4CallOptions): boolean
  converter(options: LanguageModelV4CallOptions): ThinConverter
  /**
   * Whether the vendor's package reads the stream before its doStream resolves, failing the call on
   * an error event before the first output (OpenAI: throwIfOpenAIStreamErrorBeforeOutput); the thin
   * path reads as far before it returns, and waits as long (OpenAI: 50 ms after `accepted`). Anthropic
   * reads its first part past pings and raw chunks the same way.
   */
  peeksForErrors: boolean
}

/** How long the package waits for output after the vendor said it accepted the request (acceptedGraceMs in @ai-sdk/openai). */
const ACCEPTED_GRACE_MS = 50

/**
 * One streamed call on the thin path (issue 34, decision 050). The vendor's package still builds
 * and sends the request (its request body, headers, warnings, and its errors for a non-2xx answer,
 * through the given fetch: the vendor fetch with its deadlines and retries); the thin path takes
 * the answer's body from that fetch and hands the package an empty event stream in its place. It
 * keeps the package's `stream-start` part (its warnings) and converts the body itself:
 * eventsource-parser fed from the body's reader, one JSON.parse per event, the converter's checks
 * and mapping, one ReadableStream of parts out.
 *
 * The package's own conversion takes over, from the first byte, when the converter does not take
 * an event (an error event, a malformed or unexpected one) or the body breaks: the bytes read so far and the rest of
 * the body are replayed to the package in a second doStream with no second request (its fetch
 * answers with those bytes), and the parts the thin path already sent are skipped, the parity
 * tests holding that the package makes the same ones for them. So an unusual stream ends exactly
 * as the package ends it, error and all, before or after its first output.
 *
 * `make` builds the package's model over a fetch, once per doStream.
 */
export async function thinDoStream(format: ThinFormat, make: (fetch: Fetch) => LanguageModelV4, networkFetch: Fetch, options: LanguageModelV4CallOptions): Promise<DoStreamResult> {
  let answer: Response | null = null
  const head = await make(async (input, init) => {
    const response = await networkFetch(input, init)
    if (!response.ok || response.body === null) return response
    answer = response
    return new Response('', { status: response.status, statusText: response.statusText, headers: response.headers })
  }).doStream(options)
  if (answer === null) return head
  const vendor: Response = answer
  // The package's stream over the empty body: its stream-start (the warnings), then at most its
  // finish for nothing. Read to its end rather than cancelled: cancelling its chain of streams costs
  // more (each stream makes an Error to cancel the next with).
  const startReader = head.stream.getReader()
  const start = (await startReader.read()).value
  while (!(await startReader.read()).done);

  const body = vendor.body!.getReader()
  /** Every chunk read, kept until the stream ends: what a hand-over to the package replays. */
  const seen: Uint8Array[] = []
  const decoder = createSseDecoder()
  const converter = format.converter(options)
  /** Parts converted and not yet read by the consumer. */
  let queue: LanguageModelV4StreamPart[] = start ? [start] : []
  /** Parts the consumer was given, stream-start included. */
  let sent = 0
  /** The package's stream, once the thin path has handed the call over. */
  let handedOver: ReadableStreamDefaultReader<LanguageModelV4StreamPart> | null = null
  let ended = false
  /** A read the peek below gave up waiting on: the stream's first pull takes its result. */
  let pendingRead: Promise<ReadableStreamReadResult<Uint8Array>> | null = null

  const handOver = async (): Promise<void> => {
    let rest = 0
    const replay = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (rest < seen.length) return controller.enqueue(seen[rest++]!)
        return body.read().then(
          (next) => (next.done ? controller.close() : controller.enqueue(next.value)),
          (error: unknown) => controller.error(error),
        )
      },
      cancel: (reason) => body.cancel(reason),
    })
    const taken = await make(async () => new Response(replay, { status: vendor.status, statusText: vendor.statusText, headers: vendor.headers })).doStream(options)
    handedOver = taken.stream.getReader()
    queue = []
    // The package's parts for what the thin path sent are the same ones (the parity tests): skip them.
    for (let skipped = 0; skipped < sent; skipped++) if ((await handedOver.read()).done) break
  }

  /** Reads one more chunk and converts it: whether it held output, or null once the body has ended or the call was handed over. */
  const convertNext = async (read: Promise<ReadableStreamReadResult<Uint8Array>> = body.read()): Promise<{ output: boolean; accepted: boolean } | null> => {
    let next: ReadableStreamReadResult<Uint8Array>
    try {
      next = await read
    } catch {
      // A body that broke (dropped, cut at the idle deadline, aborted): the package reports it in its
      // own words (wrapped in its APICallError, an abort left as is), replaying to the same error.
      await handOver()
      return null
    }
    if (next.done) {
      queue.push(...converter.end())
      ended = true
      return null
    }
    seen.push(next.value)
    let output = false
    let accepted = false
    const converted: LanguageModelV4StreamPart[] = []
    for (const event of decoder.push(next.value)) {
      const step = converter.push(event.data)
      if (!step.taken) {
        await handOver()
        return null
      }
      for (const part of step.parts) converted.push(part)
      output ||= step.output
      accepted ||= step.accepted
    }
    for (const part of converted) queue.push(part)
    return { output, accepted }
  }

  if (format.peeksForErrors) {
    // As the package does: read on to the first output, or 50 ms past the vendor's acceptance, before the call returns.
    let accepted = false
    for (;;) {
      const read = body.read()
      if (accepted) {
        let timer: NodeJS.Timeout | undefined
        const timedOut = await Promise.race([read.then(() => false, () => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), ACCEPTED_GRACE_MS)))])
        clearTimeout(timer)
        if (timedOut) {
          pendingRead = read
          break
        }
      }
      const step = await convertNext(read)
      if (step === null || step.output) break
      accepted ||= step.accepted
    }
  }

  return {
    ...head,
    stream: new ReadableStream<LanguageModelV4StreamPart>({
      async pull(controller) {
        for (;;) {
          if (handedOver) {
            const next = await handedOver.read()
            if (next.done) return controller.close()
            sent++
            return controller.enqueue(next.value)
          }
          if (queue.length > 0) {
            for (const part of queue) controller.enqueue(part)
            sent += queue.length
            queue = []
            if (ended) controller.close()
            return
          }
          if (ended) return controller.close()
          const read = pendingRead ?? body.read()
          pendingRead = null
          await convertNext(read)
        }
      },
      cancel(reason) {
        if (handedOver) return handedOver.cancel(reason)
        return body.cancel(reason)
      },
    }),
  }
}
