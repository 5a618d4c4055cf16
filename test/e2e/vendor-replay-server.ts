import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { documentedLimits, requestByteLimit, windowFor, type DocumentedLimits } from './vendor-documented-limits.ts'
import { countedUsageAnswer } from './vendor-fixtures/counted-usage.ts'
import { FIXTURES, type ReplayResponse, type Vendor } from './vendor-fixtures/index.ts'
import { limitError, type LimitBreach } from './vendor-fixtures/limit-errors.ts'
import { inlineFiles, type InlineFile } from './vendor-fixtures/request-media.ts'
import { requestFacts } from './vendor-fixtures/request-texts.ts'
import { vendorInputTokens } from './vendor-fixtures/vendor-token-count.ts'

/**
 * A loopback stand-in for the six vendor APIs. Each vendor lives under its own prefix (its
 * fixture's `basePath`, e.g. `/anthropic/v1`), so one server can be every `<VENDOR>_BASE_URL`.
 * A POST to a vendor's streaming endpoint is answered with the next queued response for that
 * vendor, else its plain text fixture; events are written one network write at a time, some split
 * in two, with small gaps, so the SDK parses a real stream as it arrives. Every request is recorded.
 *
 * Every streaming request's input tokens are counted (see `countInputTokens`) by the double's own
 * stand-in for the vendor's tokenizer (vendor-fixtures/vendor-token-count.ts), never by Parley's
 * estimator, so a test can see where the estimate and the vendor's count part. Started with
 * `enforceLimits`, the server also holds each streaming request to its model's documented limits
 * (test/e2e/vendor-documented-limits.ts) and to its request byte limit as the vendor does, and
 * refuses one over them with the vendor's status and error before any stream. Started with `reportCountedUsage`, an unqueued streaming call
 * is answered with a short text (or the vendor's fixture text) whose usage reports the counted input tokens.
 */

export type RecordedRequest = {
  vendor: Vendor | null
  method: string
  /** Path and query, as sent. */
  path: string
  headers: IncomingHttpHeaders
  /** The JSON body, parsed (undefined when there was none or it was not JSON). */
  body: any
  /** The body's length in bytes, as sent. */
  bytes: number
  /** For a streaming request: its input tokens as this double's vendor counts them (`countInputTokens`); else null. */
  countedInputTokens: number | null
  /** For a streaming request: the output ceiling it asked for (max_tokens by its vendor's name), or null when it set none. */
  outputCeiling: number | null
  /** For a streaming request: the documented limits of its model, or null when the table has none for it. */
  limits: DocumentedLimits | null
  /** For a streaming request to a model with limits: the window it was held to (the long-context one only with the opt-in header). */
  window: number | null
  /** The limit the request broke, when the server enforced limits and refused it. */
  breach: LimitBreach | null
  /** The HTTP status answered (null while unanswered, or for a response that never answers). */
  status: number | null
}

export type ReplayServerOptions = {
  /** Hold every streaming request to its model's documented limits; refuse it as the vendor does when over. */
  enforceLimits?: boolean
  /**
   * A multiplier on the double's own count, by vendor (default 1 for every vendor), standing in for a
   * vendor that counts more than its documented tokenizer or ratio. Changeable later with `setTokenFactor`.
   */
  tokenFactors?: Partial<Record<Vendor, number>>
  /**
   * Answer a streaming call with no queued response by a short text whose usage reports the counted
   * input tokens (instead of the plain text fixture and its recorded usage). `cacheReadShare` and
   * `cacheWriteShare` say which share of them the usage puts in the cache-read and (Anthropic)
   * cache-write counts; the rest is fresh input. With `fixtureText`, the answer says the vendor's
   * plain text fixture's text (`FIXTURES[vendor].text.text`) instead of COUNTED_ANSWER_TEXT, so
   * a test written against that text can have usage that follows each request.
   */
  reportCountedUsage?: boolean | { cacheReadShare?: number; cacheWriteShare?: number; fixtureText?: boolean }
}

export type ReplayServer = {
  url: string
  /** The `<VENDOR>_BASE_URL` for a vendor: this server plus the vendor's prefix. */
  baseUrl: (vendor: Vendor) => string
  /** Every request so far, in arrival order. */
  requests: RecordedRequest[]
  requestsTo: (vendor: Vendor) => RecordedRequest[]
  /** Answers the next streaming call to `vendor` with `response` (queued, first in first out). */
  respondNext: (vendor: Vendor, response: ReplayResponse) => void
  /** Drops every queued response (so a test that failed early leaves nothing for the next). */
  clearQueues: () => void
  /** Sets the multiplier on `vendor`'s count, for requests from now on. */
  setTokenFactor: (vendor: Vendor, factor: number) => void
  close: () => Promise<void>
}

const GAP_MS = 3
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const vendorOf = (path: string): Vendor | null =>
  (Object.values(FIXTURES).find((f) => path === f.basePath || path.startsWith(`${f.basePath}/`))?.vendor as Vendor | undefined) ?? null

/** Writes a stream's events: every other event in two writes (a read may end mid-event), a gap after each write. */
async function writeStream(res: ServerResponse, events: string[], end: 'close' | 'hang' | 'destroy' = 'close'): Promise<void> {
  for (const [i, event] of events.entries()) {
    const writes = i % 2 === 1 && event.length > 16 ? [event.slice(0, event.length >> 1), event.slice(event.length >> 1)] : [event]
    for (const bytes of writes) {
      if (res.destroyed) return
      res.write(bytes)
      await sleep(GAP_MS)
    }
  }
  if (end === 'close') res.end()
  else if (end === 'destroy') res.socket?.destroy()
}

async function answer(res: ServerResponse, response: ReplayResponse): Promise<void> {
  if (response.kind === 'hang') return
  if (response.kind === 'json') {
    res.writeHead(response.status, response.headers).end(JSON.stringify(response.body))
    return
  }
  res.writeHead(200, { ...response.headers, connection: 'keep-alive' })
  res.flushHeaders()
  await writeStream(res, response.events, response.end)
}

/**
 * A request's input tokens as the double's vendor counts them: every text of the request (system or
 * instructions, message texts, reasoning sent back, tool call arguments, tool results, tool
 * definitions; test/e2e/vendor-fixtures/request-texts.ts) and every inline file, by the model's own
 * tokenizer or documented ratio (vendor-fixtures/vendor-token-count.ts: independent of Parley's
 * estimator), times the factor, rounded up.
 */
export function countInputTokens(vendor: Vendor, vendorModelId: string, texts: readonly string[], files: readonly InlineFile[] = [], factor = 1): number {
  return vendorInputTokens(vendor, vendorModelId, texts, files, factor)
}

/** The first documented limit a request breaks, checked in the order vendors check them; null when within all. */
export function breachOf(limits: DocumentedLimits, window: number | null, input: number, output: number | null): LimitBreach | null {
  if (output !== null && limits.outputLimit !== null && output > limits.outputLimit) return { limit: 'output', requested: output, max: limits.outputLimit }
  const inputMax = Math.min(limits.inputLimit ?? Number.POSITIVE_INFINITY, window ?? Number.POSITIVE_INFINITY)
  if (input > inputMax) return { limit: 'input', input, max: inputMax }
  if (window !== null && input + (output ?? 0) > window) return { limit: 'window', input, output: output ?? 0, max: window }
  return null
}

export async function startReplayServer(options: ReplayServerOptions = {}): Promise<ReplayServer> {
  const requests: RecordedRequest[] = []
  const queues = new Map<Vendor, ReplayResponse[]>()
  const factors = new Map<Vendor, number>(Object.entries(options.tokenFactors ?? {}) as [Vendor, number][])
  const counted = options.reportCountedUsage ? (options.reportCountedUsage === true ? {} : options.reportCountedUsage) : null

  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const path = req.url ?? '/'
      const vendor = vendorOf(path.split('?')[0]!)
      const rawBytes = Buffer.concat(chunks)
      const raw = rawBytes.toString('utf8')
      let body: unknown
      try {
        body = raw === '' ? undefined : JSON.parse(raw)
      } catch {
        body = undefined
      }
      const recorded: RecordedRequest = {
        vendor,
        method: req.method ?? '',
        path,
        headers: req.headers,
        body,
        bytes: rawBytes.length,
        countedInputTokens: null,
        outputCeiling: null,
        limits: null,
        window: null,
        breach: null,
        status: null,
      }
      requests.push(recorded)

      if (vendor === null || req.method !== 'POST' || !FIXTURES[vendor].isStreamPath(path)) {
        recorded.status = 404
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `replay server: no route for ${req.method} ${path}` } }))
        return
      }
      const facts = requestFacts(vendor, body, path)
      const input = countInputTokens(vendor, facts.model ?? '', facts.texts, inlineFiles(body), factors.get(vendor) ?? 1)
      recorded.countedInputTokens = input
      recorded.outputCeiling = facts.outputCeiling
      const limits = facts.model === null ? undefined : documentedLimits(vendor, facts.model)
      // The byte limit is the vendor's front door: a body over it is refused before it is read as tokens.
      const byteLimit = facts.model === null ? null : requestByteLimit(vendor, facts.model)
      if (options.enforceLimits && byteLimit !== null && rawBytes.length > byteLimit) {
        recorded.breach = { limit: 'bytes', bytes: rawBytes.length, max: byteLimit }
      }
      if (limits) {
        recorded.limits = limits
        recorded.window = windowFor(limits, req.headers)
        if (options.enforceLimits && recorded.breach === null) recorded.breach = breachOf(limits, recorded.window, input, facts.outputCeiling)
      }
      // A refused request leaves the queue as it was: the queued answer is for the next request taken.
      const response = recorded.breach
        ? limitError(vendor, recorded.breach, facts.model ?? '')
        : queues.get(vendor)?.shift() ??
          (counted
            ? countedUsageAnswer(
                vendor,
                facts.model ?? '',
                {
                  total: input,
                  cacheRead: Math.floor(input * (counted.cacheReadShare ?? 0)),
                  cacheWrite: Math.floor(input * (counted.cacheWriteShare ?? 0)),
                },
                counted.fixtureText ? FIXTURES[vendor].text.text : undefined,
              )
            : FIXTURES[vendor].text.response)
      recorded.status = response.kind === 'hang' ? null : response.kind === 'json' ? response.status : 200
      answer(res, response).catch(() => res.destroy())
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  return {
    url,
    baseUrl: (vendor) => `${url}${FIXTURES[vendor].basePath}`,
    requests,
    requestsTo: (vendor) => requests.filter((r) => r.vendor === vendor),
    respondNext: (vendor, response) => {
      const queue = queues.get(vendor) ?? []
      queue.push(response)
      queues.set(vendor, queue)
    },
    clearQueues: () => queues.clear(),
    setTokenFactor: (vendor, factor) => {
      factors.set(vendor, factor)
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections()
        server.close((error) => (error ? reject(error) : resolve()))
      }),
  }
}
