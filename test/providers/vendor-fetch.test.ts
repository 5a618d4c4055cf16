import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { parseRetryAfter } from '../../src/providers/parse-retry-after.ts'
import { newVendorCallRecord, withVendorCallRecord } from '../../src/providers/vendor-call-record.ts'
import type { VendorCallLimits } from '../../src/providers/vendor-call-limits.ts'
import { createVendorFetch, networkFetch, NotAStreamError, sleep, VendorTimeoutError } from '../../src/providers/vendor-fetch.ts'

/**
 * The vendor fetch against a real loopback HTTP server: each request is answered by the next
 * scripted behaviour, so retries, deadlines and the idle timeout run over real sockets.
 */

type Behaviour = (req: IncomingMessage, res: ServerResponse) => void
const SSE = { 'content-type': 'text/event-stream' }

const stream = (events: string[], gapMs = 0): Behaviour => (_req, res) => {
  res.writeHead(200, SSE)
  void (async () => {
    for (const event of events) {
      res.write(event)
      if (gapMs) await sleep(gapMs)
    }
    res.end()
  })()
}
const status = (code: number, headers: Record<string, string> = {}): Behaviour => (_req, res) => {
  res.writeHead(code, { 'content-type': 'application/json', ...headers }).end(JSON.stringify({ error: { message: `status ${code}` } }))
}
const reset: Behaviour = (req) => req.socket.destroy()
const hang: Behaviour = () => undefined
const headersThenHang: Behaviour = (_req, res) => {
  res.writeHead(200, SSE)
  res.flushHeaders()
}

let url = ''
let script: Behaviour[] = []
let served = 0
const server = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    served += 1
    ;(script.shift() ?? status(599))(req, res)
  })
})
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/stream`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})
beforeEach(() => {
  script = []
  served = 0
})

const LIMITS: VendorCallLimits = { connectTimeoutMs: 1_000, firstByteTimeoutMs: 800, idleTimeoutMs: 300, maxRetries: 2, retryBaseMs: 20 }

function vendorFetch(limits: Partial<VendorCallLimits> = {}) {
  const all = { ...LIMITS, ...limits }
  const waits: number[] = []
  const fetch = createVendorFetch(all, {
    fetch: networkFetch(all),
    sleep: (ms, signal) => {
      waits.push(ms)
      return sleep(ms, signal)
    },
    random: () => 0.5,
    now: Date.now,
  })
  return { fetch, waits }
}

async function call(fetch: ReturnType<typeof vendorFetch>['fetch'], signal?: AbortSignal) {
  const record = newVendorCallRecord()
  const started = Date.now()
  try {
    const response = await withVendorCallRecord(record, () => fetch(url, { method: 'POST', body: '{}', signal }))
    return { record, response, error: null, ms: Date.now() - started }
  } catch (error) {
    return { record, response: null, error, ms: Date.now() - started }
  }
}

describe('retries before the first byte', () => {
  test('a 429 with Retry-After is retried once after the wait it asked for', async () => {
    script = [status(429, { 'retry-after': '0.3' }), stream(['data: {"a":1}\n\n'])]
    const { fetch, waits } = vendorFetch()
    const { record, response, ms } = await call(fetch)
    expect(response!.status).toBe(200)
    expect(await response!.text()).toBe('data: {"a":1}\n\n')
    expect(waits).toEqual([300])
    expect(record).toEqual({ requests: 2, retryWaitMs: 300 })
    expect(ms).toBeGreaterThanOrEqual(300)
  })

  test('retry-after-ms wins over Retry-After', async () => {
    script = [status(429, { 'retry-after-ms': '40', 'retry-after': '1' }), stream(['data: 1\n\n'])]
    const { fetch, waits } = vendorFetch()
    expect((await call(fetch)).response!.status).toBe(200)
    expect(waits).toEqual([40])
  })

  test('500, 503 and 529 are retried with exponential backoff', async () => {
    script = [status(500), status(529), stream(['data: 1\n\n'])]
    const { fetch, waits } = vendorFetch()
    const { record, response } = await call(fetch)
    expect(response!.status).toBe(200)
    // random() = 0.5: three quarters of 20 ms, then of 40 ms.
    expect(waits).toEqual([15, 30])
    expect(record.requests).toBe(3)
  })

  test('a connection reset before any answer is retried', async () => {
    script = [reset, stream(['data: 1\n\n'])]
    const { fetch } = vendorFetch()
    const { record, response } = await call(fetch)
    expect(response!.status).toBe(200)
    expect(record.requests).toBe(2)
  })

  test('after the last retry the vendor error is handed back for the SDK to read', async () => {
    script = [status(500), status(502), status(503)]
    const { fetch } = vendorFetch()
    const { record, response } = await call(fetch)
    expect(response!.status).toBe(503)
    expect(await response!.json()).toEqual({ error: { message: 'status 503' } })
    expect(record.requests).toBe(3)
  })

  test('a Retry-After past the first-byte deadline is not waited for', async () => {
    script = [status(429, { 'retry-after': '5' })]
    const { fetch, waits } = vendorFetch()
    const { response, record } = await call(fetch)
    expect(response!.status).toBe(429)
    expect(waits).toEqual([])
    expect(record.requests).toBe(1)
  })

  test('a 400 is not retried', async () => {
    script = [status(400), stream(['data: 1\n\n'])]
    const { fetch } = vendorFetch()
    const { record, response } = await call(fetch)
    expect(response!.status).toBe(400)
    expect(record.requests).toBe(1)
    expect(served).toBe(1)
  })

  test('a 200 that is not an event stream fails at once, unretried', async () => {
    script = [(_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"x","content":[]}'), stream(['data: 1\n\n'])]
    const { fetch } = vendorFetch()
    const { error, record } = await call(fetch)
    expect(error).toBeInstanceOf(NotAStreamError)
    expect((error as Error).message).toContain('application/json')
    expect(record.requests).toBe(1)
  })

  test('a cancel during the wait between attempts ends the call at once', async () => {
    script = [status(429, { 'retry-after': '0.6' })]
    const { fetch } = vendorFetch({ firstByteTimeoutMs: 2_000 })
    const controller = new AbortController()
    setTimeout(() => controller.abort(new Error('cancelled by the customer')), 100)
    const { error, record } = await call(fetch, controller.signal)
    expect((error as Error).message).toBe('cancelled by the customer')
    // Ended in the wait: the second attempt was never made.
    expect(record.requests).toBe(1)
  })
})

describe('deadlines', () => {
  test('a vendor that never answers fails at the first-byte deadline, retries included', async () => {
    script = [status(500), hang, hang]
    const { fetch } = vendorFetch()
    const { error, ms, record } = await call(fetch)
    expect(error).toBeInstanceOf(VendorTimeoutError)
    expect((error as VendorTimeoutError).phase).toBe('first_byte')
    expect(record.requests).toBe(2)
    // Not before the deadline; that it did not go on is the third attempt never made.
    expect(ms).toBeGreaterThanOrEqual(780)
  })

  test('headers without a first byte are no answer either', async () => {
    script = [headersThenHang]
    const { fetch } = vendorFetch()
    const { error, ms } = await call(fetch)
    expect(error).toBeInstanceOf(VendorTimeoutError)
    expect(ms).toBeGreaterThanOrEqual(780)
  })

  test('a stream silent past the idle timeout errors; one with short gaps does not', async () => {
    script = [
      (_req, res) => {
        res.writeHead(200, SSE)
        res.write('data: 1\n\n')
      },
      stream(['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n', 'data: 4\n\n'], 150),
    ]
    const { fetch } = vendorFetch()
    const silent = await call(fetch)
    const reader = silent.response!.body!.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: 1\n\n')
    const started = Date.now()
    const failure = await reader.read().catch((e: unknown) => e)
    expect(failure).toBeInstanceOf(VendorTimeoutError)
    expect((failure as VendorTimeoutError).phase).toBe('idle')
    expect(Date.now() - started).toBeGreaterThanOrEqual(280)

    const steady = await call(fetch)
    expect(await steady.response!.text()).toBe('data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n')
  })

  test('a slow reader is not a silent vendor: gaps between reads longer than the idle timeout error nothing', async () => {
    script = [stream(['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n'], 20)]
    const { fetch } = vendorFetch()
    const { response } = await call(fetch)
    const reader = response!.body!.getReader()
    const read: string[] = []
    for (;;) {
      // Twice the idle timeout between reads: the vendor sent everything long before.
      await sleep(2 * LIMITS.idleTimeoutMs)
      const next = await reader.read()
      if (next.done) break
      read.push(new TextDecoder().decode(next.value))
    }
    expect(read.join('')).toBe('data: 1\n\ndata: 2\n\ndata: 3\n\n')
  })
})

describe('parseRetryAfter', () => {
  const h = (entries: Record<string, string>) => new Headers(entries)
  test('seconds, fractions, dates and nonsense', () => {
    expect(parseRetryAfter(h({ 'retry-after': '2' }), 0)).toBe(2000)
    expect(parseRetryAfter(h({ 'retry-after': '0.25' }), 0)).toBe(250)
    expect(parseRetryAfter(h({ 'retry-after-ms': '120' }), 0)).toBe(120)
    const now = Date.parse('2026-11-23T12:00:00Z')
    expect(parseRetryAfter(h({ 'retry-after': 'Mon, 23 Nov 2026 12:00:03 GMT' }), now)).toBe(3000)
    expect(parseRetryAfter(h({ 'retry-after': 'Mon, 23 Nov 2026 11:00:00 GMT' }), now)).toBe(0)
    expect(parseRetryAfter(h({ 'retry-after': 'soon' }), 0)).toBeNull()
    expect(parseRetryAfter(h({}), 0)).toBeNull()
  })
})
