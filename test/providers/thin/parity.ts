import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { expect } from 'vitest'
import { createSseDecoder } from '../../../src/providers/thin/sse.ts'
import { thinDoStream, type ThinFormat } from '../../../src/providers/thin/thin-model.ts'
import type { ReplayResponse } from '../../e2e/vendor-fixtures/index.ts'

/**
 * The thin path beside the vendor's package, on recorded streams (decision 050): both read the same
 * bytes, with no socket, and what each makes of them is compared.
 */

export type RecordedStream = ReplayResponse & { kind: 'stream' }

const encoder = new TextEncoder()

/** A recorded stream with `replace` in place of its event at `at` (counted from the end when negative). */
export function alteredStream(recorded: unknown, at: number, ...replace: string[]): RecordedStream {
  const s = recorded as RecordedStream
  const events = [...s.events]
  events.splice(at < 0 ? events.length + at : at, 1, ...replace)
  return { ...s, events }
}

/** The stream's bytes in reads of `size` bytes (every read boundary a place a vendor's chunk may end), or one read per event. */
export function readsOf(stream: RecordedStream, size?: number): Uint8Array[] {
  if (size === undefined) return stream.events.map((e) => encoder.encode(e))
  const all = encoder.encode(stream.events.join(''))
  const reads: Uint8Array[] = []
  for (let i = 0; i < all.length; i += size) reads.push(all.subarray(i, i + size))
  return reads
}

/** A fetch double answering every call with the recorded stream, read by read; then the body ends (or breaks, for `end: 'destroy'`). */
export function answering(stream: RecordedStream, size?: number): typeof fetch {
  return (async () => {
    const reads = readsOf(stream, size)
    let next = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (next < reads.length) return controller.enqueue(reads[next++]!)
        if (stream.end === 'destroy') return controller.error(new TypeError('terminated'))
        controller.close()
      },
    })
    return new Response(body, { status: 200, headers: stream.headers })
  }) as unknown as typeof fetch
}

/** Every event's data in the recorded stream, as the thin path's SSE decoder reads them. */
export function eventData(stream: RecordedStream): string[] {
  const decoder = createSseDecoder()
  return readsOf(stream).flatMap((bytes) => decoder.push(bytes).map((e) => e.data))
}

/** A call's parts, or the error that failed it, or the error that broke its stream after some parts. */
export type Outcome = { parts: LanguageModelV4StreamPart[]; failed: unknown; broke: unknown }

export async function outcomeOf(call: () => PromiseLike<{ stream: ReadableStream<LanguageModelV4StreamPart> }>): Promise<Outcome> {
  let stream: ReadableStream<LanguageModelV4StreamPart>
  try {
    stream = (await call()).stream
  } catch (error) {
    return { parts: [], failed: error, broke: null }
  }
  const parts: LanguageModelV4StreamPart[] = []
  const reader = stream.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return { parts, failed: null, broke: null }
      parts.push(value)
    }
  } catch (error) {
    return { parts, failed: null, broke: error }
  }
}

/** The package's call and the thin path's on the same recorded stream. */
export async function bothOn(make: (fetch: typeof globalThis.fetch) => LanguageModelV4, format: ThinFormat, options: LanguageModelV4CallOptions, stream: RecordedStream, size?: number) {
  const sdk = await outcomeOf(() => make(answering(stream, size)).doStream(options))
  let made = 0
  const counted = (fetch: typeof globalThis.fetch) => {
    made++
    return make(fetch)
  }
  const thin = await outcomeOf(() => thinDoStream(format, counted, answering(stream, size), options))
  // 1: the thin path converted the stream; 2: it handed the call to the package (no second request: its fetch replays the bytes).
  return { sdk, thin, packageCalls: made }
}

/** An error as a run reads it: its class name and message (describeVendorError), its status and retryability where it has them. */
export const errorShape = (error: unknown) =>
  error === null || error === undefined
    ? error
    : {
        name: (error as Error).name,
        message: (error as Error).message,
        cause: ((error as Error).cause as Error | undefined)?.message,
        statusCode: (error as { statusCode?: unknown }).statusCode,
        isRetryable: (error as { isRetryable?: unknown }).isRetryable,
        data: (error as { data?: unknown }).data,
      }

/** Error parts compared by shape (each side makes its own Error object); a source's id is made up per call by the package. */
export const comparable = (parts: LanguageModelV4StreamPart[]) =>
  parts.map((p) => (p.type === 'error' ? { type: 'error', error: errorShape(p.error) } : p.type === 'source' ? { ...p, id: '(generated per call)' } : p))

export function expectSameOutcome(o: { sdk: Outcome; thin: Outcome }): void {
  expect(comparable(o.thin.parts)).toEqual(comparable(o.sdk.parts))
  expect(errorShape(o.thin.failed)).toEqual(errorShape(o.sdk.failed))
  expect(errorShape(o.thin.broke)).toEqual(errorShape(o.sdk.broke))
}
